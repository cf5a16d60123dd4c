import EntitledKit
import EntitledSampleCore
import SwiftUI

/// The products with their prices (StoreKit) and the offers the server lets this customer take,
/// Restore Purchases, and the last action's result.
struct PaywallView: View {
    @EnvironmentObject var model: SampleModel

    var body: some View {
        List {
            Section {
                Text("Unlock Pro: every feature, on all your devices.")
            }
            Section("Plans") {
                if model.paywall.isEmpty {
                    Text(model.busy ? "Loading…" : "No products: is the scheme's StoreKit configuration EntitledSample.storekit?")
                }
                ForEach(model.paywall) { item in
                    PlanRow(item: item)
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

/// One product: buy it (with its introductory offer when the server says the customer may take
/// it), or buy it with one of the server's promotional or win-back offers.
struct PlanRow: View {
    @EnvironmentObject var model: SampleModel
    let item: PaywallItem

    var body: some View {
        VStack(alignment: .leading, spacing: 6) {
            Button {
                Task { await model.purchase(item.id) }
            } label: {
                HStack {
                    Text(item.product.displayName)
                    Spacer()
                    Text(item.product.displayPrice)
                }
            }
            if item.introductoryOfferEligible, let intro = item.product.introductoryOffer {
                Text("Starts with \(intro)").font(.caption).foregroundColor(.secondary)
            }
            ForEach(item.offers, id: \.self) { offer in
                Button(Self.title(offer)) { Task { await model.purchase(item.id, offer: offer) } }
                    .font(.caption)
            }
        }
    }

    static func title(_ offer: PurchaseOffer) -> String {
        switch offer {
        case .promotional(let id): return "Redeem offer \(id)"
        case .winBack(let id): return "Come back: \(id)"
        case .introductory: return "Introductory offer"
        }
    }
}

/// The last action's result and who the customer is (an anonymous `$anon:…` id until a login).
struct StatusSection: View {
    @EnvironmentObject var model: SampleModel

    var body: some View {
        if let message = model.message {
            Section { Text(message) }
        }
        if let id = model.answer?.appUserId {
            Section("Customer") {
                Text(id).font(.footnote).foregroundColor(.secondary)
            }
        }
    }
}
