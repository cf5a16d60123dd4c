import Foundation

/// What the paywall shows of a product: StoreKit's `Product` in the app, a fake in tests.
public struct ProductInfo: Sendable, Hashable {
    public var id: String
    public var displayName: String
    /// Localized, e.g. `$4.99`.
    public var displayPrice: String
    /// The introductory offer as StoreKit describes it (e.g. `1 week free`), nil when it has none.
    public var introductoryOffer: String?

    public init(id: String, displayName: String, displayPrice: String, introductoryOffer: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.displayPrice = displayPrice
        self.introductoryOffer = introductoryOffer
    }
}

/// Loads the products' names and prices (StoreKit's `Product.products(for:)` in the app).
public protocol ProductSource: Sendable {
    /// The products among `ids` the store knows; unknown ids are left out.
    func products(for ids: [String]) async throws -> [ProductInfo]
}
