/// Everything a customer is entitled to at one instant, derived from facts, policy and `now`.
///
/// Arrays are sorted by their id so that equal inputs give equal (and equally encoded) states.
public struct CustomerState: Hashable, Sendable, Codable {
    /// The environment evaluated; facts of others were ignored.
    public var environment: Environment
    /// The `now` of the evaluation.
    public var evaluatedAt: Int64
    /// For proactive restore: `new` (no purchases but consumables), `active` (something grants access
    /// now), `inactive`.
    public var customerClass: CustomerClass
    /// One entry per entitlement id that any transaction ever granted, sorted by id.
    public var entitlements: [EntitlementState]
    /// Subscription groups with history or configured in the policy, sorted by id.
    public var subscriptionGroups: [SubscriptionGroupState]
    /// Non-consumables, one per product, sorted by productId.
    public var nonConsumables: [NonConsumableState]
    /// Non-renewing subscriptions, one run of stacked purchases per group (or product), sorted by id.
    public var nonRenewingSubscriptions: [NonRenewingState]
    /// Consumable balances per product, sorted by productId.
    public var consumables: [ConsumableBalance]
    /// App pre-order.
    public var preorder: PreorderState
    /// Estimated proceeds rate of each purchased transaction, sorted by transactionId.
    public var proceeds: [ProceedsEstimate]
    /// Carried from the policy for the storage layer.
    public var restoreBehavior: RestoreBehavior
    /// The earliest instant after `evaluatedAt` at which a grant's status changes with no new fact
    /// (an expiry, a grace period's end, the end of billing retry); nil when none is scheduled.
    /// A stored projection is stale from then on. Also the instant a group's `paidServiceDays`
    /// resets after a lapse over 60 days, and the instants a configured win-back offer's lapse window
    /// opens or closes; nothing else in the state moves with time alone.
    public var nextStatusChangeAt: Int64?
    /// The configured offers the customer is eligible for now.
    public var offers: EligibleOffers
    /// The storefront of the customer's latest transaction that names one; nil when none does.
    public var storefront: StorefrontState?

    public init(
        environment: Environment, evaluatedAt: Int64, customerClass: CustomerClass,
        entitlements: [EntitlementState], subscriptionGroups: [SubscriptionGroupState],
        nonConsumables: [NonConsumableState], nonRenewingSubscriptions: [NonRenewingState],
        consumables: [ConsumableBalance], preorder: PreorderState, proceeds: [ProceedsEstimate],
        restoreBehavior: RestoreBehavior, nextStatusChangeAt: Int64?, offers: EligibleOffers = EligibleOffers(),
        storefront: StorefrontState? = nil
    ) {
        self.offers = offers
        self.storefront = storefront
        self.environment = environment
        self.evaluatedAt = evaluatedAt
        self.customerClass = customerClass
        self.entitlements = entitlements
        self.subscriptionGroups = subscriptionGroups
        self.nonConsumables = nonConsumables
        self.nonRenewingSubscriptions = nonRenewingSubscriptions
        self.consumables = consumables
        self.preorder = preorder
        self.proceeds = proceeds
        self.restoreBehavior = restoreBehavior
        self.nextStatusChangeAt = nextStatusChangeAt
    }

    /// The state of one entitlement, nil when nothing ever granted it.
    public func entitlement(_ id: String) -> EntitlementState? { entitlements.first { $0.id == id } }

    /// One subscription group's state.
    public func group(_ id: String) -> SubscriptionGroupState? { subscriptionGroups.first { $0.id == id } }

    /// One consumable's balance.
    public func consumable(_ productId: String) -> ConsumableBalance? {
        consumables.first { $0.productId == productId }
    }

    /// One non-consumable's state.
    public func nonConsumable(_ productId: String) -> NonConsumableState? {
        nonConsumables.first { $0.productId == productId }
    }

    /// Ids of the entitlements that grant access now (`active` or `gracePeriod`).
    public var activeEntitlementIds: [String] { entitlements.filter(\.active).map(\.id) }
}

/// The status of a grant, best first: the order decides which source an entitlement shows.
///
/// - `active`: within the paid (or free) period, or a non-consumable owned.
/// - `gracePeriod`: renewal failed, Apple's grace period still runs: access continues.
/// - `billingRetry`: renewal failed, no (more) grace: no access while Apple retries (up to 60 days).
/// - `expired`: the period ended and nothing renews it.
/// - `revoked`: Family Sharing access withdrawn (`REVOKE`, `FAMILY_REVOKE`, or a family-shared revocation).
/// - `refunded`: Apple refunded the transaction (`REFUND`, V1 `CANCEL`).
public enum EntitlementStatus: String, Hashable, Sendable, Codable, CaseIterable {
    case active
    case gracePeriod
    case billingRetry
    case expired
    case revoked
    case refunded

    /// Whether this status grants access.
    public var grantsAccess: Bool { self == .active || self == .gracePeriod }

    /// 0 is best.
    var rank: Int {
        switch self {
        case .active: 0
        case .gracePeriod: 1
        case .billingRetry: 2
        case .expired: 3
        case .revoked: 4
        case .refunded: 5
        }
    }
}

/// The kind of period a subscription transaction is in (from `offerType` / `offerDiscountType`,
/// or V1 `is_trial_period`, `is_in_intro_offer_period`, `promotional_offer_id`, `offer_code_ref_name`).
public enum PeriodType: String, Hashable, Sendable, Codable, CaseIterable {
    case trial
    case intro
    case promotional
    case offerCode
    case winBack
    /// A retention offer (`offerType` 5): the price that kept a subscriber who was cancelling.
    case retentionOffer
    case normal
}

/// A price increase on the next renewal.
public enum PriceIncrease: String, Hashable, Sendable, Codable, CaseIterable {
    /// Consent needed, not given yet.
    case pending
    /// Consented, or no consent needed.
    case accepted
}

/// `new` / `active` / `inactive`, as in Apple's proactive restore guidance.
public enum CustomerClass: String, Hashable, Sendable, Codable, CaseIterable {
    case new
    case active
    case inactive
}

/// A product change relative to the current one, from the group's levels (1 = highest).
public enum ProductChange: String, Hashable, Sendable, Codable, CaseIterable {
    /// To a higher level: Apple applies it at once.
    case upgrade
    /// To a lower level: at the next renewal.
    case downgrade
    /// Same level: at once with the same duration, at the next renewal otherwise.
    case crossgrade
}

/// The access one transaction (or subscription, or stack of non-renewing purchases) gives.
public struct Grant: Hashable, Sendable, Codable {
    public var active: Bool
    public var status: EntitlementStatus
    public var productId: String
    public var productType: ProductType
    /// The transaction behind the grant (the current period's, for subscriptions).
    public var transactionId: String
    public var originalTransactionId: String
    public var ownership: Ownership
    /// The current transaction's `purchaseDate`.
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    /// nil for non-consumables.
    public var expiresAt: Int64?
    /// The grace period end while in billing retry (Apple's, or the V1 fallback).
    public var gracePeriodExpiresAt: Int64?
    /// Auto-renew is on; nil when unknown (no renewal info) or not a subscription.
    public var willRenew: Bool?
    /// The product the next renewal switches to (a pending downgrade or crossgrade).
    public var renewsTo: String?
    public var periodType: PeriodType
    /// When the current billing issue was first seen (in grace period or billing retry only).
    public var billingIssueDetectedAt: Int64?
    /// When auto-renew was turned off (while it is off).
    public var unsubscribeDetectedAt: Int64?
    public var priceIncrease: PriceIncrease?
    public var environment: Environment
    /// The subscription group key, for auto-renewable subscriptions.
    public var subscriptionGroup: String?
    /// The store the purchase was made in.
    public var store: PurchaseStore

    public init(
        status: EntitlementStatus, productId: String, productType: ProductType, transactionId: String,
        originalTransactionId: String, ownership: Ownership, purchaseDate: Int64, originalPurchaseDate: Int64?,
        expiresAt: Int64?, gracePeriodExpiresAt: Int64? = nil, willRenew: Bool? = nil, renewsTo: String? = nil,
        periodType: PeriodType = .normal, billingIssueDetectedAt: Int64? = nil,
        unsubscribeDetectedAt: Int64? = nil, priceIncrease: PriceIncrease? = nil, environment: Environment,
        subscriptionGroup: String? = nil, store: PurchaseStore = .appStore
    ) {
        self.active = status.grantsAccess
        self.status = status
        self.productId = productId
        self.productType = productType
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.ownership = ownership
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.willRenew = willRenew
        self.renewsTo = renewsTo
        self.periodType = periodType
        self.billingIssueDetectedAt = billingIssueDetectedAt
        self.unsubscribeDetectedAt = unsubscribeDetectedAt
        self.priceIncrease = priceIncrease
        self.environment = environment
        self.subscriptionGroup = subscriptionGroup
        self.store = store
    }
}

/// One entitlement: the best of all grants that give it (see ``EntitlementStatus`` for the order,
/// then the latest expiry).
public struct EntitlementState: Hashable, Sendable, Codable {
    public var id: String
    public var active: Bool
    public var status: EntitlementStatus
    public var productId: String
    public var productType: ProductType
    public var transactionId: String
    public var originalTransactionId: String
    public var ownership: Ownership
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresAt: Int64?
    public var gracePeriodExpiresAt: Int64?
    public var willRenew: Bool?
    public var renewsTo: String?
    public var periodType: PeriodType
    public var billingIssueDetectedAt: Int64?
    public var unsubscribeDetectedAt: Int64?
    public var priceIncrease: PriceIncrease?
    public var environment: Environment
    public var subscriptionGroup: String?
    /// The promotional grant that gives it, nil when a purchase does (``source``).
    public var grantId: String?
    /// The store of the purchase that gives it; nil when a promotional grant does.
    public var store: PurchaseStore?

    /// Where the entitlement's access comes from: a purchase, or a promotional grant (`grantId`).
    public var source: EntitlementSource { grantId == nil ? .purchase : .grant }

    /// The entitlement `id` as given by `grant`.
    public init(id: String, grant: Grant) {
        self.id = id
        self.active = grant.active
        self.status = grant.status
        self.productId = grant.productId
        self.productType = grant.productType
        self.transactionId = grant.transactionId
        self.originalTransactionId = grant.originalTransactionId
        self.ownership = grant.ownership
        self.purchaseDate = grant.purchaseDate
        self.originalPurchaseDate = grant.originalPurchaseDate
        self.expiresAt = grant.expiresAt
        self.gracePeriodExpiresAt = grant.gracePeriodExpiresAt
        self.willRenew = grant.willRenew
        self.renewsTo = grant.renewsTo
        self.periodType = grant.periodType
        self.billingIssueDetectedAt = grant.billingIssueDetectedAt
        self.unsubscribeDetectedAt = grant.unsubscribeDetectedAt
        self.priceIncrease = grant.priceIncrease
        self.environment = grant.environment
        self.subscriptionGroup = grant.subscriptionGroup
        self.store = grant.store
    }
}

/// One subscription group: its current subscription, offers and progress toward the 85% rate.
public struct SubscriptionGroupState: Hashable, Sendable, Codable {
    /// The group key (policy name, else Apple's `subscriptionGroupIdentifier`).
    public var id: String
    public var customerClass: CustomerClass
    /// The one current subscription: the best-status subscription in the group, then the latest purchase.
    public var current: Grant?
    /// Whether `current.renewsTo` is a downgrade or crossgrade (nil without levels or change).
    public var pendingChange: ProductChange?
    /// Never had any subscription (trial, introductory, offer or full price) in this group: Apple
    /// gives one introductory offer per group, to customers new to it.
    public var introOfferEligible: Bool
    /// Has had a subscription in this group (promotional offers are for existing and lapsed subscribers).
    public var promotionalOfferEligible: Bool
    /// `eligibleWinBackOfferIds` of the group's newest renewal info.
    public var winBackOfferIds: [String]
    /// Days of paid service counted toward the 85% rate, each paid period whole once bought (what the
    /// next renewal counts) to its original expiry; free trials and renewal-date extensions excluded;
    /// days before a recovery inside billing grace included; reset after a lapse over 60 days.
    public var paidServiceDays: Int
    /// The estimated proceeds rate of the next renewal: 0.85 after 365 paid days (or small business), else 0.70.
    public var proceedsRate: Double

    public init(
        id: String, customerClass: CustomerClass, current: Grant?, pendingChange: ProductChange?,
        introOfferEligible: Bool, promotionalOfferEligible: Bool, winBackOfferIds: [String],
        paidServiceDays: Int, proceedsRate: Double
    ) {
        self.id = id
        self.customerClass = customerClass
        self.current = current
        self.pendingChange = pendingChange
        self.introOfferEligible = introOfferEligible
        self.promotionalOfferEligible = promotionalOfferEligible
        self.winBackOfferIds = winBackOfferIds
        self.paidServiceDays = paidServiceDays
        self.proceedsRate = proceedsRate
    }
}

/// A non-consumable product: owned unless every transaction for it was revoked or refunded.
public struct NonConsumableState: Hashable, Sendable, Codable {
    public var productId: String
    public var owned: Bool
    /// The best transaction's grant (purchased beats family-shared on a tie).
    public var grant: Grant

    public init(productId: String, owned: Bool, grant: Grant) {
        self.productId = productId
        self.owned = owned
        self.grant = grant
    }
}

/// A run of non-renewing purchases: each starts when the previous one ends (or at its purchase, if later).
public struct NonRenewingState: Hashable, Sendable, Codable {
    /// The policy's subscription group of the product, else the productId.
    public var id: String
    public var active: Bool
    /// When the run (all stacked purchases) ends.
    public var expiresAt: Int64?
    /// Transactions counted (not refunded or revoked), in stacking order.
    public var transactionIds: [String]
    /// The best grant (the stack's, or a refunded purchase when nothing else remains).
    public var grant: Grant

    public init(id: String, active: Bool, expiresAt: Int64?, transactionIds: [String], grant: Grant) {
        self.id = id
        self.active = active
        self.expiresAt = expiresAt
        self.transactionIds = transactionIds
        self.grant = grant
    }
}

/// A consumable product's balance: each transaction credits its quantity once, a refund debits it,
/// each spend (``ConsumableSpendFact``) subtracts its quantity.
public struct ConsumableBalance: Hashable, Sendable, Codable {
    public var productId: String
    /// Units purchased.
    public var credited: Int
    /// Units refunded.
    public var debited: Int
    /// Units the app spent.
    public var spent: Int
    /// `credited - debited - spent`: what the app may spend. Storage refuses a spend larger than it,
    /// so only a refund of units already spent takes it below zero (the next purchase pays for them).
    public var balance: Int
    /// Transactions credited, sorted.
    public var transactionIds: [String]
    /// Transactions refunded (debited: in full, or the units of a quantity-based partial refund), sorted.
    public var refundedTransactionIds: [String]
    /// The idempotency keys of the spends, sorted.
    public var spendKeys: [String]

    public init(
        productId: String, credited: Int, debited: Int, transactionIds: [String], refundedTransactionIds: [String],
        spent: Int = 0, spendKeys: [String] = []
    ) {
        self.productId = productId
        self.credited = credited
        self.debited = debited
        self.spent = spent
        self.balance = credited.minus(debited).minus(spent)
        self.transactionIds = transactionIds
        self.refundedTransactionIds = refundedTransactionIds
        self.spendKeys = spendKeys
    }
}

/// Where the customer buys: the storefront of their latest transaction that names one.
public struct StorefrontState: Hashable, Sendable, Codable {
    /// ISO 3166-1 alpha-3 country code (`storefront`).
    public var storefront: String
    /// Apple's storefront id (`storefrontId`), when the transaction carried it.
    public var storefrontId: String?
    /// The transaction it was read from.
    public var transactionId: String

    public init(storefront: String, storefrontId: String?, transactionId: String) {
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionId = transactionId
    }
}

/// App pre-order, from the newest AppTransaction (`preorderDate`) or receipt (`preorder_date_ms`).
public struct PreorderState: Hashable, Sendable, Codable {
    public var isPreordered: Bool
    public var preorderDate: Int64?
    /// The app's `originalPurchaseDate`, when an AppTransaction is known.
    public var appOriginalPurchaseDate: Int64?

    public init(isPreordered: Bool, preorderDate: Int64?, appOriginalPurchaseDate: Int64?) {
        self.isPreordered = isPreordered
        self.preorderDate = preorderDate
        self.appOriginalPurchaseDate = appOriginalPurchaseDate
    }
}

/// The estimated share of a purchased transaction's price the developer receives.
public struct ProceedsEstimate: Hashable, Sendable, Codable {
    public var transactionId: String
    public var productId: String
    /// 0.70, or 0.85 (small business, or a renewal after a year of paid service in its group).
    public var rate: Double
    /// Whether the transaction was refunded (its proceeds are 0).
    public var refunded: Bool
    /// `price` in milli-units, when known.
    public var price: Int64?
    public var currency: String?
    /// `price × rate` rounded down, in milli-units; 0 when refunded; nil without a price.
    public var proceeds: Int64?

    public init(transactionId: String, productId: String, rate: Double, refunded: Bool, price: Int64?, currency: String?) {
        self.transactionId = transactionId
        self.productId = productId
        self.rate = rate
        self.refunded = refunded
        self.price = price
        self.currency = currency
        // Integer arithmetic (rate is 0.70 or 0.85) keeps the figure exact and platform independent;
        // split at 1,000 so that no price, however large, overflows: q·1000·p/1000 + r·p/1000.
        let permille: Int64 = rate >= 0.85 ? 850 : 700
        self.proceeds = price.map { price in
            let (thousands, rest) = price.quotientAndRemainder(dividingBy: 1_000)
            return refunded ? 0 : thousands * permille + rest * permille / 1_000
        }
    }
}

/// An offer by product and identifier.
public struct OfferReference: Hashable, Sendable, Codable {
    public var productId: String
    public var offerId: String

    public init(productId: String, offerId: String) {
        self.productId = productId
        self.offerId = offerId
    }
}

/// The policy's offers a customer may be given now, each list sorted by product then offer.
public struct EligibleOffers: Hashable, Sendable, Codable {
    /// Auto-renewable products whose group the customer never subscribed to.
    public var introductory: [String]
    /// Configured win-back offers whose lapse window the customer is in.
    public var winBack: [OfferReference]
    /// Configured promotional offers of groups the customer has subscribed to (existing or lapsed).
    public var promotional: [OfferReference]

    public init(introductory: [String] = [], winBack: [OfferReference] = [], promotional: [OfferReference] = []) {
        self.introductory = introductory
        self.winBack = winBack
        self.promotional = promotional
    }
}
