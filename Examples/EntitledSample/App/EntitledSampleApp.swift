import EntitledKit
import EntitledSampleCore
import SwiftUI

/// The sample app: a paywall until the server says `pro`, then the Pro screen. Every decision is
/// the server's and every action the model's (EntitledSampleCore); the views only show them.
@main
struct EntitledSampleApp: App {
    @StateObject private var model = SampleModel(
        entitled: Entitled.configure(
            baseURL: SampleSettings.dev.baseURL, appKey: SampleSettings.dev.appKey, bundleId: SampleSettings.dev.bundleId,
            store: StoreKitGateway()),
        products: StoreKitProducts(), settings: .dev)

    var body: some Scene {
        WindowGroup {
            RootView()
                .environmentObject(model)
                .task { await model.start() }
        }
    }
}

/// The gate: the Pro screen when the latest answer grants the entitlement, else the paywall.
struct RootView: View {
    @EnvironmentObject var model: SampleModel

    var body: some View {
        NavigationView {
            Group {
                if model.isUnlocked {
                    ProView()
                } else {
                    PaywallView()
                }
            }
            .navigationTitle("Entitled Sample")
        }
    }
}
