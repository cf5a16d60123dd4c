// The engine's own vocabulary for what Apple told us (design principle 6). A mapper in the server
// fills these from the verified Apple models; field names follow Apple's so the mapping is a copy.
// All instants are epoch milliseconds (UTC).

/// One verified fact about one customer, in one environment.
public indirect enum Fact: Hashable, Sendable, Codable {
    /// A signed transaction (`JWSTransactionDecodedPayload`), from a notification, the app or the Server API.
    case transaction(TransactionFact)
    /// Signed renewal info (`JWSRenewalInfoDecodedPayload`).
    case renewalInfo(RenewalInfoFact)
    /// A V2 notification's metadata (its `data` is mapped to transaction and renewal facts beside it).
    case notification(NotificationFact)
    /// A signed AppTransaction, or the top level of a V1 receipt (pre-order date).
    case appTransaction(AppTransactionFact)
    /// A V1 `latest_receipt_info[]` (or `in_app[]`) entry.
    case receiptEntry(ReceiptEntryFact)
    /// A V1 `pending_renewal_info[]` entry.
    case pendingRenewal(PendingRenewalFact)
    /// A V1 notification's metadata (its `unified_receipt` is mapped to receipt facts beside it).
    case v1Notification(V1NotificationFact)
    /// Units of a consumable the app spent through the server (not Apple's: the server's own fact,
    /// kept in the ledger beside Apple's so that a balance replays from the ledger alone).
    case consumableSpend(ConsumableSpendFact)
    /// An operator's promotional grant of an entitlement (not Apple's: it counts in every environment).
    case promotionalGrant(PromotionalGrantFact)
    /// A promotional grant ended early.
    case promotionalGrantEnd(PromotionalGrantEndFact)
    /// A Play subscription purchase as the Developer API answered (``PlaySubscriptionFact``).
    case playSubscription(PlaySubscriptionFact)
    /// A Play one-time product purchase as the Developer API answered.
    case playProduct(PlayProductFact)
    /// A voided Play purchase.
    case playVoided(PlayVoidedPurchaseFact)
    /// What a Play order was charged, as the Orders API answered.
    case playOrder(PlayOrderFact)

    /// Encoded as `{"kind": "transaction", "fact": {…}}` (kinds: `transaction`, `renewalInfo`,
    /// `notification`, `appTransaction`, `receiptEntry`, `pendingRenewal`, `v1Notification`,
    /// `consumableSpend`, `promotionalGrant`, `promotionalGrantEnd`, `playSubscription`, `playProduct`,
    /// `playVoided`, `playOrder`).
    private enum CodingKeys: String, CodingKey {
        case kind
        case fact
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(String.self, forKey: .kind)
        switch kind {
        case "transaction": self = .transaction(try container.decode(TransactionFact.self, forKey: .fact))
        case "renewalInfo": self = .renewalInfo(try container.decode(RenewalInfoFact.self, forKey: .fact))
        case "notification": self = .notification(try container.decode(NotificationFact.self, forKey: .fact))
        case "appTransaction": self = .appTransaction(try container.decode(AppTransactionFact.self, forKey: .fact))
        case "receiptEntry": self = .receiptEntry(try container.decode(ReceiptEntryFact.self, forKey: .fact))
        case "pendingRenewal": self = .pendingRenewal(try container.decode(PendingRenewalFact.self, forKey: .fact))
        case "v1Notification": self = .v1Notification(try container.decode(V1NotificationFact.self, forKey: .fact))
        case "consumableSpend": self = .consumableSpend(try container.decode(ConsumableSpendFact.self, forKey: .fact))
        case "promotionalGrant": self = .promotionalGrant(try container.decode(PromotionalGrantFact.self, forKey: .fact))
        case "promotionalGrantEnd":
            self = .promotionalGrantEnd(try container.decode(PromotionalGrantEndFact.self, forKey: .fact))
        case "playSubscription": self = .playSubscription(try container.decode(PlaySubscriptionFact.self, forKey: .fact))
        case "playProduct": self = .playProduct(try container.decode(PlayProductFact.self, forKey: .fact))
        case "playVoided": self = .playVoided(try container.decode(PlayVoidedPurchaseFact.self, forKey: .fact))
        case "playOrder": self = .playOrder(try container.decode(PlayOrderFact.self, forKey: .fact))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: container, debugDescription: "unknown fact kind '\(kind)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .transaction(let fact):
            try container.encode("transaction", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .renewalInfo(let fact):
            try container.encode("renewalInfo", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .notification(let fact):
            try container.encode("notification", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .appTransaction(let fact):
            try container.encode("appTransaction", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .receiptEntry(let fact):
            try container.encode("receiptEntry", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .pendingRenewal(let fact):
            try container.encode("pendingRenewal", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .v1Notification(let fact):
            try container.encode("v1Notification", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .consumableSpend(let fact):
            try container.encode("consumableSpend", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .promotionalGrant(let fact):
            try container.encode("promotionalGrant", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .promotionalGrantEnd(let fact):
            try container.encode("promotionalGrantEnd", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .playSubscription(let fact):
            try container.encode("playSubscription", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .playProduct(let fact):
            try container.encode("playProduct", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .playVoided(let fact):
            try container.encode("playVoided", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        case .playOrder(let fact):
            try container.encode("playOrder", forKey: .kind)
            try container.encode(fact, forKey: .fact)
        }
    }

    /// The environment the fact belongs to (Production for promotional grants, which are not the
    /// App Store's and count in every environment's evaluation).
    public var environment: Environment {
        switch self {
        case .transaction(let fact): fact.environment
        case .renewalInfo(let fact): fact.environment
        case .notification(let fact): fact.environment
        case .appTransaction(let fact): fact.environment
        case .receiptEntry(let fact): fact.environment
        case .pendingRenewal(let fact): fact.environment
        case .v1Notification(let fact): fact.environment
        case .consumableSpend(let fact): fact.environment
        case .promotionalGrant, .promotionalGrantEnd: .production
        case .playSubscription(let fact): fact.environment
        case .playProduct(let fact): fact.environment
        case .playVoided(let fact): fact.environment
        case .playOrder(let fact): fact.environment
        }
    }
}

/// A verified transaction: one version of `JWSTransactionDecodedPayload`.
///
/// Apple re-signs a transaction when it changes (a refund adds `revocationDate`, a reversal removes
/// it, an upgrade sets `isUpgraded`); the version with the newest `signedDate` wins.
public struct TransactionFact: Hashable, Sendable, Codable {
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var productId: String
    /// `subscriptionGroupIdentifier`.
    public var subscriptionGroupId: String?
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int
    /// `type`: Auto-Renewable Subscription, Non-Consumable, Consumable, Non-Renewing Subscription.
    public var productType: ProductType
    public var appAccountToken: String?
    /// `inAppOwnershipType`.
    public var ownership: Ownership
    public var signedDate: Int64
    public var revocationDate: Int64?
    /// `revocationReason`: 0 other, 1 an issue in the app.
    public var revocationReason: Int?
    public var revocationType: RevocationType?
    public var isUpgraded: Bool
    public var offerType: OfferType?
    public var offerDiscountType: OfferDiscountType?
    public var offerIdentifier: String?
    public var environment: Environment
    public var storefront: String?
    /// Apple's numeric storefront id (`storefrontId`), beside the country code.
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    /// `price` in milli-units of `currency`.
    public var price: Int64?
    public var currency: String?
    /// Members of the signed payload this build does not know, by name, with their raw JSON
    /// (bounded, see ``UnknownFields``); nil when there were none. Recorded, never interpreted.
    public var unknownFields: [String: String]?

    public init(
        transactionId: String, originalTransactionId: String, webOrderLineItemId: String? = nil,
        productId: String, subscriptionGroupId: String? = nil, purchaseDate: Int64,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, quantity: Int = 1,
        productType: ProductType, appAccountToken: String? = nil, ownership: Ownership = .purchased,
        signedDate: Int64, revocationDate: Int64? = nil, revocationReason: Int? = nil,
        revocationType: RevocationType? = nil, isUpgraded: Bool = false, offerType: OfferType? = nil,
        offerDiscountType: OfferDiscountType? = nil, offerIdentifier: String? = nil,
        environment: Environment = .production, storefront: String? = nil,
        transactionReason: TransactionReason? = nil, price: Int64? = nil, currency: String? = nil,
        storefrontId: String? = nil, unknownFields: [String: String]? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.productId = productId
        self.subscriptionGroupId = subscriptionGroupId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.productType = productType
        self.appAccountToken = appAccountToken
        self.ownership = ownership
        self.signedDate = signedDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.transactionReason = transactionReason
        self.price = price
        self.currency = currency
        self.storefrontId = storefrontId
        self.unknownFields = unknownFields
    }
}

/// Verified renewal info: one version of `JWSRenewalInfoDecodedPayload` for a subscription.
///
/// The newest version (by `signedDate`) per `originalTransactionId` describes the next renewal;
/// older versions still date when auto-renew was turned off or a billing issue began.
public struct RenewalInfoFact: Hashable, Sendable, Codable {
    public var originalTransactionId: String
    public var productId: String
    public var autoRenewProductId: String?
    public var autoRenewStatus: Bool
    /// 1 cancelled, 2 billing error, 3 price increase declined, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    /// Apple's grace period end; absent when the app has no grace period (then retry gives no access).
    public var gracePeriodExpiresDate: Int64?
    /// 0 the customer has not answered a price increase, 1 consented (or no consent was needed).
    public var priceIncreaseStatus: Int?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var signedDate: Int64
    public var renewalDate: Int64?
    public var recentSubscriptionStartDate: Int64?
    public var eligibleWinBackOfferIds: [String]
    public var environment: Environment
    /// Members this build does not know, raw (see ``TransactionFact/unknownFields``).
    public var unknownFields: [String: String]?

    public init(
        originalTransactionId: String, productId: String, autoRenewProductId: String? = nil,
        autoRenewStatus: Bool, expirationIntent: Int? = nil, isInBillingRetryPeriod: Bool? = nil,
        gracePeriodExpiresDate: Int64? = nil, priceIncreaseStatus: Int? = nil, offerType: OfferType? = nil,
        offerIdentifier: String? = nil, offerDiscountType: OfferDiscountType? = nil, signedDate: Int64,
        renewalDate: Int64? = nil, recentSubscriptionStartDate: Int64? = nil,
        eligibleWinBackOfferIds: [String] = [], environment: Environment = .production,
        unknownFields: [String: String]? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.priceIncreaseStatus = priceIncreaseStatus
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.signedDate = signedDate
        self.renewalDate = renewalDate
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.environment = environment
        self.unknownFields = unknownFields
    }
}

/// A V2 notification's metadata.
///
/// The transaction and renewal info in its `data` are separate facts; the notification itself
/// adds dated evidence (see ``evaluate(facts:policy:now:environment:)`` for what each type does).
public struct NotificationFact: Hashable, Sendable, Codable {
    public var type: NotificationType
    public var subtype: NotificationSubtype?
    public var notificationUUID: String
    public var signedDate: Int64
    public var environment: Environment
    /// From `data.signedTransactionInfo`, when the notification has one.
    public var originalTransactionId: String?
    public var transactionId: String?
    public var productId: String?
    /// Members of the payload (top level, `data`, `summary`, `externalPurchaseToken`) this build
    /// does not know, by dotted path, raw (see ``TransactionFact/unknownFields``).
    public var unknownFields: [String: String]?

    public init(
        type: NotificationType, subtype: NotificationSubtype? = nil, notificationUUID: String, signedDate: Int64,
        environment: Environment = .production, originalTransactionId: String? = nil,
        transactionId: String? = nil, productId: String? = nil, unknownFields: [String: String]? = nil
    ) {
        self.type = type
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.signedDate = signedDate
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.productId = productId
        self.unknownFields = unknownFields
    }
}

/// A signed AppTransaction, or the top level of a V1 receipt (`preorder_date_ms`,
/// `original_purchase_date_ms`, `original_application_version`; `receipt_creation_date_ms` as `signedDate`).
public struct AppTransactionFact: Hashable, Sendable, Codable {
    public var appTransactionId: String?
    public var originalPurchaseDate: Int64
    public var preorderDate: Int64?
    public var originalApplicationVersion: String?
    public var signedDate: Int64
    public var environment: Environment

    public init(
        appTransactionId: String? = nil, originalPurchaseDate: Int64, preorderDate: Int64? = nil,
        originalApplicationVersion: String? = nil, signedDate: Int64, environment: Environment = .production
    ) {
        self.appTransactionId = appTransactionId
        self.originalPurchaseDate = originalPurchaseDate
        self.preorderDate = preorderDate
        self.originalApplicationVersion = originalApplicationVersion
        self.signedDate = signedDate
        self.environment = environment
    }
}

/// A V1 receipt entry (`latest_receipt_info[]` / `in_app[]`), dates already parsed to milliseconds.
///
/// V1 data is unsigned; `receiptDate` (the receipt's `receipt_creation_date_ms`, or the time the
/// notification carrying it was signed by our ledger) stands in for `signedDate` when versions compete.
/// `cancellationDate` on an entry with `isUpgraded` marks the upgrade, not a refund.
public struct ReceiptEntryFact: Hashable, Sendable, Codable {
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var productId: String
    public var subscriptionGroupId: String?
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var cancellationDate: Int64?
    /// `cancellation_reason`: 0 other, 1 an issue in the app.
    public var cancellationReason: Int?
    public var isTrialPeriod: Bool
    public var isInIntroOfferPeriod: Bool
    public var isUpgraded: Bool
    public var ownership: Ownership
    public var promotionalOfferId: String?
    public var offerCodeRefName: String?
    public var quantity: Int
    public var appAccountToken: String?
    public var receiptDate: Int64
    public var environment: Environment

    public init(
        transactionId: String, originalTransactionId: String, webOrderLineItemId: String? = nil,
        productId: String, subscriptionGroupId: String? = nil, purchaseDate: Int64,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, cancellationDate: Int64? = nil,
        cancellationReason: Int? = nil, isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false,
        isUpgraded: Bool = false, ownership: Ownership = .purchased, promotionalOfferId: String? = nil,
        offerCodeRefName: String? = nil, quantity: Int = 1, appAccountToken: String? = nil,
        receiptDate: Int64, environment: Environment = .production
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.productId = productId
        self.subscriptionGroupId = subscriptionGroupId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.ownership = ownership
        self.promotionalOfferId = promotionalOfferId
        self.offerCodeRefName = offerCodeRefName
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.receiptDate = receiptDate
        self.environment = environment
    }
}

/// A V1 `pending_renewal_info[]` entry (or the renewal fields of a V1 notification body).
///
/// V1 may omit `grace_period_expires_date_ms`; then, while in billing retry, the policy's
/// ``Policy/fallbackGraceDays`` apply.
public struct PendingRenewalFact: Hashable, Sendable, Codable {
    public var originalTransactionId: String
    public var productId: String
    public var autoRenewProductId: String?
    public var autoRenewStatus: Bool
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    /// `price_consent_status`: 0 not yet consented, 1 consented.
    public var priceConsentStatus: Int?
    /// `price_increase_status`: 0 not yet answered, 1 consented.
    public var priceIncreaseStatus: Int?
    public var promotionalOfferId: String?
    public var offerCodeRefName: String?
    /// Plays `signedDate` (see ``ReceiptEntryFact/receiptDate``).
    public var receiptDate: Int64
    public var environment: Environment

    public init(
        originalTransactionId: String, productId: String, autoRenewProductId: String? = nil,
        autoRenewStatus: Bool, expirationIntent: Int? = nil, isInBillingRetryPeriod: Bool? = nil,
        gracePeriodExpiresDate: Int64? = nil, priceConsentStatus: Int? = nil, priceIncreaseStatus: Int? = nil,
        promotionalOfferId: String? = nil, offerCodeRefName: String? = nil, receiptDate: Int64,
        environment: Environment = .production
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.priceConsentStatus = priceConsentStatus
        self.priceIncreaseStatus = priceIncreaseStatus
        self.promotionalOfferId = promotionalOfferId
        self.offerCodeRefName = offerCodeRefName
        self.receiptDate = receiptDate
        self.environment = environment
    }
}

/// A V1 notification's metadata (`notification_type` and the ids it concerns).
public struct V1NotificationFact: Hashable, Sendable, Codable {
    public var type: V1NotificationType
    /// `auto_renew_status_change_date_ms` when present, else the newest date in its `unified_receipt`;
    /// a `DID_FAIL_TO_RENEW` is dated at least at the end of the period that failed to renew.
    public var date: Int64
    public var environment: Environment
    public var originalTransactionId: String?
    public var transactionId: String?
    public var productId: String?
    /// `auto_renew_status` of the body (`"true"` / `"false"`).
    public var autoRenewStatus: Bool?

    public init(
        type: V1NotificationType, date: Int64, environment: Environment = .production,
        originalTransactionId: String? = nil, transactionId: String? = nil, productId: String? = nil,
        autoRenewStatus: Bool? = nil
    ) {
        self.type = type
        self.date = date
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
    }
}

/// Units of a consumable the app spent (`POST /v1/customers/{appUserId}/consumables/{productId}/spend`).
///
/// The server's own fact: it belongs to the customer whose token it carries, and the
/// `idempotencyKey` makes it one fact however often the app sends it (``Fact/identity``). The
/// engine subtracts every spend of a product from its balance.
public struct ConsumableSpendFact: Hashable, Sendable, Codable {
    /// The spending customer's `appAccountToken` (lowercase).
    public var appAccountToken: String
    public var productId: String
    public var quantity: Int
    /// The app's key for this spend: the same key is the same spend.
    public var idempotencyKey: String
    /// When the server recorded it.
    public var spentAt: Int64
    /// The product's balance right after the spend: what the spend answered, and answers again
    /// when the same key is sent again. Not read by the engine.
    public var balanceAfter: Int
    public var environment: Environment

    public init(
        appAccountToken: String, productId: String, quantity: Int, idempotencyKey: String, spentAt: Int64,
        balanceAfter: Int, environment: Environment = .production
    ) {
        self.appAccountToken = appAccountToken
        self.productId = productId
        self.quantity = quantity
        self.idempotencyKey = idempotencyKey
        self.spentAt = spentAt
        self.balanceAfter = balanceAfter
        self.environment = environment
    }
}
