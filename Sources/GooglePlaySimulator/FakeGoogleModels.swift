import GooglePlay

/// A product the fake Google sells.
public struct FakePlayProduct: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// An auto-renewing subscription; each base plan renews every `periodSeconds`.
        case subscription(basePlans: [String], periodSeconds: Int64)
        /// A one-time product; consumable ones can be consumed and bought again.
        case oneTime(consumable: Bool)
    }

    public var productId: String
    public var kind: Kind
    /// A subscription's recurring price (`autoRenewingPlan.recurringPrice`), a one-time product's
    /// unit price (only `orders.get` answers it); nil answers none.
    public var price: Money?

    public init(productId: String, kind: Kind, price: Money? = nil) {
        self.productId = productId
        self.kind = kind
        self.price = price
    }
}

/// Why the fake refused a lifecycle action or an API call (answered with `status`).
public struct FakeGoogleError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// The HTTP status the Developer API answers with.
    public var status: Int
    public init(_ message: String, status: Int = 400) {
        self.message = message
        self.status = status
    }
    public var description: String { message }

    /// Google's answer for a token or product it does not know.
    public static let notFound = FakeGoogleError("The purchase token was not found.", status: 404)
}

/// One subscription purchase token's state in the fake.
struct FakeSubscription: Sendable, Codable, Equatable {
    var packageName: String
    var productId: String
    var basePlanId: String
    var offerId: String?
    var periodSeconds: Int64
    var state: SubscriptionState
    var startMillis: Int64
    var expiryMillis: Int64
    var autoRenew: Bool
    var acknowledged: Bool
    var linkedPurchaseToken: String?
    var obfuscatedAccountId: String?
    var test: Bool
    var orderBase: String
    var renewals: Int
    var autoResumeMillis: Int64?
    var canceledBy: CancelReason?
    var voided: Bool
    /// The recurring price every period is charged after the introductory ones.
    var price: Money?
    /// What each of the first ``introductoryPeriods`` periods is charged (an introductory offer;
    /// the subscription answers `offerPhase.introductoryPrice` then, and no price).
    var introductoryPrice: Money?
    var introductoryPeriods: Int?

    /// Whether the period of order number `index` (0 the first, 1 its first renewal, …) is introductory.
    func isIntroductory(_ index: Int) -> Bool { introductoryPrice != nil && index < (introductoryPeriods ?? 0) }

    /// What the period of order number `index` is charged.
    func price(ofOrder index: Int) -> Money? { isIntroductory(index) ? introductoryPrice : price }

    enum CancelReason: Sendable, Codable { case user, system, developer, replacement }

    var purchase: SubscriptionPurchaseV2 {
        let orderId = renewals == 0 ? orderBase : "\(orderBase)..\(renewals - 1)"
        let context: CanceledStateContext? = canceledBy.map {
            switch $0 {
            case .user: CanceledStateContext(userInitiatedCancellation: .init())
            case .system: CanceledStateContext(systemInitiatedCancellation: .init())
            case .developer: CanceledStateContext(developerInitiatedCancellation: .init())
            case .replacement: CanceledStateContext(replacementCancellation: .init())
            }
        }
        return SubscriptionPurchaseV2(
            regionCode: "US",
            lineItems: [
                SubscriptionPurchaseLineItem(
                    productId: productId, expiryTime: GoogleTimestamp(milliseconds: expiryMillis),
                    autoRenewingPlan: AutoRenewingPlan(autoRenewEnabled: autoRenew, recurringPrice: price),
                    offerDetails: OfferDetails(basePlanId: basePlanId, offerId: offerId),
                    offerPhase: isIntroductory(renewals) ? .introductory : .base,
                    latestSuccessfulOrderId: orderId)
            ],
            startTime: GoogleTimestamp(milliseconds: startMillis), subscriptionState: state, latestOrderId: orderId,
            linkedPurchaseToken: linkedPurchaseToken,
            pausedStateContext: state == .paused ? PausedStateContext(autoResumeTime: autoResumeMillis.map(GoogleTimestamp.init)) : nil,
            canceledStateContext: context, testPurchase: test ? TestPurchase() : nil,
            acknowledgementState: acknowledged ? .acknowledged : .pending,
            externalAccountIdentifiers: obfuscatedAccountId.map { ExternalAccountIdentifiers(obfuscatedExternalAccountId: $0) })
    }
}

/// One one-time purchase token's state in the fake.
struct FakeProductPurchase: Sendable, Codable, Equatable {
    var packageName: String
    var productId: String
    var purchaseMillis: Int64
    var orderId: String
    var quantity: Int
    var canceled: Bool
    var consumed: Bool
    var acknowledged: Bool
    var obfuscatedAccountId: String?
    var test: Bool
    /// Units refunded by quantity-based partial refunds (absent in state saved before there were any).
    var refundedQuantity: Int?

    func purchase(token: String) -> ProductPurchase {
        ProductPurchase(
            purchaseTimeMillis: purchaseMillis, purchaseState: canceled ? 1 : 0, consumptionState: consumed ? 1 : 0, orderId: orderId,
            purchaseType: test ? 0 : nil, acknowledgementState: acknowledged ? 1 : 0, purchaseToken: token, productId: productId,
            quantity: quantity, obfuscatedExternalAccountId: obfuscatedAccountId, regionCode: "US",
            refundableQuantity: canceled ? 0 : quantity - (refundedQuantity ?? 0))
    }
}
