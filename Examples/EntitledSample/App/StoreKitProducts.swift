import EntitledSampleCore
import StoreKit

/// The products' names, prices and introductory offers from StoreKit (the scheme's
/// `EntitledSample.storekit` when run from Xcode).
struct StoreKitProducts: ProductSource {
    func products(for ids: [String]) async throws -> [ProductInfo] {
        try await Product.products(for: ids).map { product in
            ProductInfo(
                id: product.id, displayName: product.displayName, displayPrice: product.displayPrice,
                introductoryOffer: product.subscription?.introductoryOffer.map(Self.describe))
        }
    }

    /// "1 week free", "$0.99 for 1 month", "$2.49 a month for 3 months".
    static func describe(_ offer: Product.SubscriptionOffer) -> String {
        let unit: String
        switch offer.period.unit {
        case .day: unit = "day"
        case .week: unit = "week"
        case .month: unit = "month"
        case .year: unit = "year"
        @unknown default: unit = "period"
        }
        let length = "\(offer.period.value) \(unit)\(offer.period.value == 1 ? "" : "s")"
        if offer.paymentMode == .freeTrial { return "\(length) free" }
        if offer.paymentMode == .payUpFront { return "\(offer.displayPrice) for \(length)" }
        return "\(offer.displayPrice) a \(unit) for \(offer.periodCount) \(unit)\(offer.periodCount == 1 ? "" : "s")"
    }
}
