/// One order of the Orders API (`orders.get`): what Google actually charged for it, which the
/// purchase APIs do not say for introductory phases and one-time products.
public struct Order: Sendable, Hashable, Codable {
    /// The largest answer read.
    public static let maximumBytes = 256 * 1024

    public var orderId: String?
    public var purchaseToken: String?
    /// `State`: `PENDING`, `PROCESSED`, `CANCELED`, `PENDING_REFUND`, `PARTIALLY_REFUNDED`,
    /// `REFUNDED` (an open token: kept as sent).
    public var state: String?
    /// What the buyer paid, tax included.
    public var total: Money?
    /// The tax in ``total``.
    public var tax: Money?
    /// What the developer receives, in the buyer's currency (after Google's fee and tax).
    public var developerRevenueInBuyerCurrency: Money?
    /// The order's line items (one per product bought).
    public var lineItems: [OrderLineItem]?

    public init(
        orderId: String?, purchaseToken: String? = nil, state: String? = nil, total: Money? = nil, tax: Money? = nil,
        developerRevenueInBuyerCurrency: Money? = nil, lineItems: [OrderLineItem]? = nil
    ) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.state = state
        self.total = total
        self.tax = tax
        self.developerRevenueInBuyerCurrency = developerRevenueInBuyerCurrency
        self.lineItems = lineItems
    }
}

/// One line item of an ``Order``.
public struct OrderLineItem: Sendable, Hashable, Codable {
    public var productId: String?
    /// The product's price before discounts.
    public var listingPrice: Money?
    /// What the buyer paid for this item, tax included.
    public var total: Money?
    /// The tax in ``total``.
    public var tax: Money?

    public init(productId: String?, listingPrice: Money? = nil, total: Money? = nil, tax: Money? = nil) {
        self.productId = productId
        self.listingPrice = listingPrice
        self.total = total
        self.tax = tax
    }
}
