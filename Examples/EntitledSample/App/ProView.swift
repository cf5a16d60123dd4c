import EntitledKit
import EntitledSampleCore
import SwiftUI

/// The entitlement-gated screen: shown only while the server's answer grants `pro`.
struct ProView: View {
    @EnvironmentObject var model: SampleModel

    var body: some View {
        List {
            Section {
                Label("Pro is unlocked", systemImage: "checkmark.seal.fill")
            }
            if let grant = model.answer?.entitlements[model.settings.entitlement] {
                Section("Your plan") {
                    Text(grant.productId)
                    Text("Status: \(grant.status)")
                    if let ends = grant.accessEndsAt {
                        Text("Renews or ends \(ends, style: .date)")
                    }
                }
            }
            Section {
                Button("Restore Purchases") { Task { await model.restore() } }
            }
            StatusSection()
        }
        .disabled(model.busy)
        .refreshable { await model.refresh() }
    }
}
