// Google Play's facts, in the engine's terms. Google signs nothing the server keeps: a Play fact is
// what the Developer API answered when the server asked (over TLS, with the service account's
// token), dated by when it answered (`observedAt`). Field names follow Google's.

/// The store a purchase was made in.
public enum PurchaseStore: String, Hashable, Sendable, Codable, CaseIterable {
    case appStore
    case playStore
}

/// `SubscriptionPurchaseV2.subscriptionState`: the Play subscription's state as Google reports it.
/// Open like Apple's tokens: a state this build does not know still decodes (and grants nothing).
public struct PlaySubscriptionState: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let unspecified: Self = "SUBSCRIPTION_STATE_UNSPECIFIED"
    public static let pending: Self = "SUBSCRIPTION_STATE_PENDING"
    public static let active: Self = "SUBSCRIPTION_STATE_ACTIVE"
    public static let paused: Self = "SUBSCRIPTION_STATE_PAUSED"
    public static let inGracePeriod: Self = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
    public static let onHold: Self = "SUBSCRIPTION_STATE_ON_HOLD"
    public static let canceled: Self = "SUBSCRIPTION_STATE_CANCELED"
    public static let expired: Self = "SUBSCRIPTION_STATE_EXPIRED"
    public static let pendingPurchaseCanceled: Self = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
}

/// One snapshot of a Play subscription purchase (`purchases.subscriptionsv2.get`), keyed by its
/// purchase token.
///
/// Versions of one token are ordered by `observedAt` (the newest answer Google gave wins), then by
/// content: the set of snapshots decides, not the order they arrived in.
public struct PlaySubscriptionFact: Hashable, Sendable, Codable {
    public var purchaseToken: String
    /// The token this purchase replaced (upgrade, downgrade, resubscribe): that one is superseded.
    public var linkedPurchaseToken: String?
    public var packageName: String
    /// The line item's `productId` (the subscription; of several line items, the one expiring last).
    public var productId: String
    /// `offerDetails.basePlanId` of that line item.
    public var basePlanId: String?
    /// `offerDetails.offerId` of that line item (absent at the base plan's price).
    public var offerId: String?
    public var state: PlaySubscriptionState
    /// `startTime`: when the subscription was granted (absent while pending).
    public var startTime: Int64?
    /// The line item's `expiryTime` (in grace period: the end of grace).
    public var expiryTime: Int64?
    /// `autoRenewingPlan.autoRenewEnabled`; nil for a prepaid plan.
    public var autoRenewEnabled: Bool?
    /// `deferredItemReplacement.productId`: the product the next renewal switches to.
    public var renewsTo: String?
    /// `pausedStateContext.autoResumeTime`.
    public var autoResumeTime: Int64?
    public var latestOrderId: String?
    /// `acknowledgementState` is `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledged: Bool
    /// `externalAccountIdentifiers.obfuscatedExternalAccountId`: the customer's `appAccountToken`
    /// when the app passed it to `setObfuscatedAccountId`.
    public var obfuscatedExternalAccountId: String?
    /// ISO 3166-1 alpha-2, as Google sent it (the engine reads ``storefront``).
    public var regionCode: String?
    /// When the Developer API gave this answer (the server's clock): the version order.
    public var observedAt: Int64
    /// Sandbox for license testers' purchases (`testPurchase`), else Production.
    public var environment: Environment
    /// What the current period (`latestOrderId`) was charged, in milli-units of `currency`: 0 in a
    /// free trial, `recurringPrice` at the base price; nil when Google's answer does not say (an
    /// introductory or proration phase, a prepaid plan, a snapshot stored before prices were kept).
    public var price: Int64?
    /// ISO 4217 code of `recurringPrice`.
    public var currency: String?
    /// The line item's `offerPhase`: trial, intro or normal (nil in snapshots stored before it was kept).
    public var periodType: PeriodType?

    public init(
        purchaseToken: String, linkedPurchaseToken: String? = nil, packageName: String, productId: String,
        basePlanId: String? = nil, offerId: String? = nil, state: PlaySubscriptionState, startTime: Int64?,
        expiryTime: Int64?, autoRenewEnabled: Bool? = nil, renewsTo: String? = nil, autoResumeTime: Int64? = nil,
        latestOrderId: String? = nil, acknowledged: Bool = false, obfuscatedExternalAccountId: String? = nil,
        regionCode: String? = nil, observedAt: Int64, environment: Environment = .production, price: Int64? = nil,
        currency: String? = nil, periodType: PeriodType? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.linkedPurchaseToken = linkedPurchaseToken
        self.packageName = packageName
        self.productId = productId
        self.basePlanId = basePlanId
        self.offerId = offerId
        self.state = state
        self.startTime = startTime
        self.expiryTime = expiryTime
        self.autoRenewEnabled = autoRenewEnabled
        self.renewsTo = renewsTo
        self.autoResumeTime = autoResumeTime
        self.latestOrderId = latestOrderId
        self.acknowledged = acknowledged
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.regionCode = regionCode
        self.observedAt = observedAt
        self.environment = environment
        self.price = price
        self.currency = currency
        self.periodType = periodType
    }
}

/// One snapshot of a Play one-time product purchase (`purchases.products.get`), keyed by its
/// purchase token; versions ordered like ``PlaySubscriptionFact``'s.
public struct PlayProductFact: Hashable, Sendable, Codable {
    public var purchaseToken: String
    public var packageName: String
    public var productId: String
    public var orderId: String?
    /// `purchaseState`: 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int
    public var quantity: Int
    /// `purchaseTimeMillis`.
    public var purchaseTime: Int64
    /// `consumptionState` is 1.
    public var consumed: Bool
    /// `acknowledgementState` is 1.
    public var acknowledged: Bool
    public var obfuscatedExternalAccountId: String?
    /// ISO 3166-1 alpha-2, as Google sent it (the engine reads ``storefront``).
    public var regionCode: String?
    public var observedAt: Int64
    public var environment: Environment
    /// `refundableQuantity`: the units not refunded yet (quantity-based partial refunds and full
    /// refunds taken off); nil when Google did not say.
    public var refundableQuantity: Int?

    public init(
        purchaseToken: String, packageName: String, productId: String, orderId: String? = nil, purchaseState: Int,
        quantity: Int = 1, purchaseTime: Int64, consumed: Bool = false, acknowledged: Bool = false,
        obfuscatedExternalAccountId: String? = nil, regionCode: String? = nil, observedAt: Int64,
        environment: Environment = .production, refundableQuantity: Int? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.packageName = packageName
        self.productId = productId
        self.orderId = orderId
        self.purchaseState = purchaseState
        self.quantity = quantity
        self.purchaseTime = purchaseTime
        self.consumed = consumed
        self.acknowledged = acknowledged
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.regionCode = regionCode
        self.observedAt = observedAt
        self.environment = environment
        self.refundableQuantity = refundableQuantity
    }
}

/// A voided Play purchase (`voidedPurchaseNotification`, `purchases.voidedpurchases.list`): refunded,
/// charged back or revoked. Final: nothing reinstates it.
public struct PlayVoidedPurchaseFact: Hashable, Sendable, Codable {
    public var purchaseToken: String
    /// The order voided: for a subscription, one of its periods (only the current one ends access).
    public var orderId: String?
    /// 1 subscription, 2 one-time product (`productType` of the notification).
    public var productType: Int?
    /// 1 full refund, 2 quantity-based partial refund.
    public var refundType: Int?
    public var voidedTime: Int64
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// Google's reason code (7 chargeback, …).
    public var voidedReason: Int?
    public var environment: Environment
    /// `voidedQuantity` of a listed quantity-based partial refund: the units it refunded.
    public var voidedQuantity: Int?

    public init(
        purchaseToken: String, orderId: String? = nil, productType: Int? = nil, refundType: Int? = nil,
        voidedTime: Int64, voidedSource: Int? = nil, voidedReason: Int? = nil, environment: Environment = .production,
        voidedQuantity: Int? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.productType = productType
        self.refundType = refundType
        self.voidedTime = voidedTime
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.environment = environment
        self.voidedQuantity = voidedQuantity
    }
}

extension PlaySubscriptionFact {
    var orderKey: [OrderKey] {
        [
            key(observedAt), key(purchaseToken), key(linkedPurchaseToken), key(packageName), key(productId),
            key(basePlanId), key(offerId), key(state), key(startTime), key(expiryTime),
            key(autoRenewEnabled.map { $0 ? 1 : 0 } as Int?), key(renewsTo), key(autoResumeTime), key(latestOrderId),
            key(acknowledged), key(obfuscatedExternalAccountId), key(regionCode), key(environment), key(price), key(currency),
            key(periodType),
        ]
    }
}

extension PlayProductFact {
    var orderKey: [OrderKey] {
        [
            key(observedAt), key(purchaseToken), key(packageName), key(productId), key(orderId), key(purchaseState),
            key(quantity), key(purchaseTime), key(consumed), key(acknowledged), key(obfuscatedExternalAccountId),
            key(regionCode), key(environment), key(refundableQuantity),
        ]
    }
}

extension PlaySubscriptionFact {
    /// The purchase's country as a storefront: Apple's alpha-3 code of `regionCode` (`US` → `USA`),
    /// so one country is one storefront whichever store sold it; an unknown code is kept as given.
    public var storefront: String? { regionCode.map(CountryCode.alpha3) }
}

extension PlayProductFact {
    /// The purchase's country as a storefront (see ``PlaySubscriptionFact/storefront``).
    public var storefront: String? { regionCode.map(CountryCode.alpha3) }
}
