import Entitlements

// Legacy receipts and V1 notifications write dates as strings of epoch milliseconds and flags as strings.
// The models keep those strings exactly as sent; the typed views (dates without the `Ms` suffix, other
// values with a `Value` suffix) parse them and give nil for anything malformed instead of failing the decode.

/// The `environment` of V1 notifications (`Sandbox` | `PROD`) and verifyReceipt (`Sandbox` | `Production`).
public struct LegacyEnvironment: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let sandbox = LegacyEnvironment(rawValue: "Sandbox")
    /// Production, as V1 notifications spell it.
    public static let prod = LegacyEnvironment(rawValue: "PROD")
    /// Production, as verifyReceipt and `unified_receipt` spell it.
    public static let production = LegacyEnvironment(rawValue: "Production")

    public static let known: [LegacyEnvironment] = [
        .sandbox, .prod, .production,
    ]

    /// The V2 environment this corresponds to; nil for an unknown value. `Xcode` and `LocalTesting`
    /// only occur in receipts parsed here (``AppReceipt/verifyReceiptResponse``), never from Apple.
    public var appStoreEnvironment: AppStoreEnvironment? {
        switch self {
        case .sandbox: .sandbox
        case .prod, .production: .production
        default: AppStoreEnvironment.known.first { $0.isLocal && $0.rawValue == rawValue }
        }
    }
}

/// The JSON body of a legacy V1 App Store Server Notification (unsigned).
///
/// `password` is the app's shared secret and the only proof the body came from Apple: compare it in constant time.
public struct ResponseBodyV1: Sendable, Hashable, Codable {
    public var notificationType: V1NotificationType?
    public var password: String?
    public var environment: LegacyEnvironment?
    /// The app's bundle identifier.
    public var bid: String?
    /// The app's bundle version.
    public var bvrs: String?
    public var autoRenewAdamId: String?
    /// `true` or `false` as text (receipts use `1`/`0`); see ``isAutoRenewEnabled``.
    public var autoRenewStatus: String?
    public var autoRenewProductId: String?
    public var autoRenewStatusChangeDateMs: String?
    /// Apple documents a number but has sent strings; both decode, kept as text.
    public var expirationIntent: LegacyText?
    public var unifiedReceipt: UnifiedReceipt?

    /// Every field defaults to nil (absent).
    public init(
        notificationType: V1NotificationType? = nil,
        password: String? = nil,
        environment: LegacyEnvironment? = nil,
        bid: String? = nil,
        bvrs: String? = nil,
        autoRenewAdamId: String? = nil,
        autoRenewStatus: String? = nil,
        autoRenewProductId: String? = nil,
        autoRenewStatusChangeDateMs: String? = nil,
        expirationIntent: LegacyText? = nil,
        unifiedReceipt: UnifiedReceipt? = nil
    ) {
        self.notificationType = notificationType
        self.password = password
        self.environment = environment
        self.bid = bid
        self.bvrs = bvrs
        self.autoRenewAdamId = autoRenewAdamId
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatusChangeDateMs = autoRenewStatusChangeDateMs
        self.expirationIntent = expirationIntent
        self.unifiedReceipt = unifiedReceipt
    }

    enum CodingKeys: String, CodingKey {
        case notificationType = "notification_type"
        case password
        case environment
        case bid
        case bvrs
        case autoRenewAdamId = "auto_renew_adam_id"
        case autoRenewStatus = "auto_renew_status"
        case autoRenewProductId = "auto_renew_product_id"
        case autoRenewStatusChangeDateMs = "auto_renew_status_change_date_ms"
        case expirationIntent = "expiration_intent"
        case unifiedReceipt = "unified_receipt"
    }

    /// `auto_renew_status` parsed; nil when absent or unrecognised.
    public var isAutoRenewEnabled: Bool? { LegacyField.flag(autoRenewStatus) }
    /// `auto_renew_status_change_date_ms` parsed.
    public var autoRenewStatusChangeDate: Int64? { LegacyField.milliseconds(autoRenewStatusChangeDateMs) }
    /// `expiration_intent` parsed.
    public var expirationIntentValue: ExpirationIntent? {
        LegacyField.int32(expirationIntent?.text).map(ExpirationIntent.init(rawValue:))
    }
}

/// The customer's latest in-app purchase state in a V1 notification (at most the 100 newest entries).
public struct UnifiedReceipt: Sendable, Hashable, Codable {
    public var environment: LegacyEnvironment?
    /// 0 when the receipt is valid; otherwise a ``VerifyReceiptStatus`` code.
    public var status: Int?
    /// The latest base64 app receipt.
    public var latestReceipt: String?
    public var latestReceiptInfo: [LatestReceiptInfo]?
    public var pendingRenewalInfo: [PendingRenewalInfo]?

    /// Every field defaults to nil (absent).
    public init(
        environment: LegacyEnvironment? = nil,
        status: Int? = nil,
        latestReceipt: String? = nil,
        latestReceiptInfo: [LatestReceiptInfo]? = nil,
        pendingRenewalInfo: [PendingRenewalInfo]? = nil
    ) {
        self.environment = environment
        self.status = status
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
    }

    enum CodingKeys: String, CodingKey {
        case environment
        case status
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
    }

    /// `status` as a ``VerifyReceiptStatus``.
    public var statusValue: VerifyReceiptStatus? { status.map(VerifyReceiptStatus.init(rawValue:)) }
}

/// One in-app purchase transaction from a legacy receipt (`latest_receipt_info[]` and `receipt.in_app[]`).
public struct LatestReceiptInfo: Sendable, Hashable, Codable {
    public var quantity: String?
    public var productId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDateMs: String?
    public var originalPurchaseDateMs: String?
    public var expiresDateMs: String?
    /// Set when Apple support refunded the transaction.
    public var cancellationDateMs: String?
    /// `1` app issue, `0` other.
    public var cancellationReason: String?
    public var isTrialPeriod: String?
    public var isInIntroOfferPeriod: String?
    public var isUpgraded: String?
    public var inAppOwnershipType: InAppOwnershipType?
    public var promotionalOfferId: String?
    public var offerCodeRefName: String?
    public var appAccountToken: String?

    /// Every field defaults to nil (absent).
    public init(
        quantity: String? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDateMs: String? = nil,
        originalPurchaseDateMs: String? = nil,
        expiresDateMs: String? = nil,
        cancellationDateMs: String? = nil,
        cancellationReason: String? = nil,
        isTrialPeriod: String? = nil,
        isInIntroOfferPeriod: String? = nil,
        isUpgraded: String? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        promotionalOfferId: String? = nil,
        offerCodeRefName: String? = nil,
        appAccountToken: String? = nil
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDateMs = purchaseDateMs
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.inAppOwnershipType = inAppOwnershipType
        self.promotionalOfferId = promotionalOfferId
        self.offerCodeRefName = offerCodeRefName
        self.appAccountToken = appAccountToken
    }

    enum CodingKeys: String, CodingKey {
        case quantity
        case productId = "product_id"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case webOrderLineItemId = "web_order_line_item_id"
        case subscriptionGroupIdentifier = "subscription_group_identifier"
        case purchaseDateMs = "purchase_date_ms"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case isTrialPeriod = "is_trial_period"
        case isInIntroOfferPeriod = "is_in_intro_offer_period"
        case isUpgraded = "is_upgraded"
        case inAppOwnershipType = "in_app_ownership_type"
        case promotionalOfferId = "promotional_offer_id"
        case offerCodeRefName = "offer_code_ref_name"
        case appAccountToken = "app_account_token"
    }

    public var quantityValue: Int? { LegacyField.int(quantity) }
    public var purchaseDate: Int64? { LegacyField.milliseconds(purchaseDateMs) }
    public var originalPurchaseDate: Int64? { LegacyField.milliseconds(originalPurchaseDateMs) }
    public var expiresDate: Int64? { LegacyField.milliseconds(expiresDateMs) }
    public var cancellationDate: Int64? { LegacyField.milliseconds(cancellationDateMs) }
    public var cancellationReasonValue: RevocationReason? {
        LegacyField.int32(cancellationReason).map(RevocationReason.init(rawValue:))
    }
    public var isTrialPeriodValue: Bool? { LegacyField.flag(isTrialPeriod) }
    public var isInIntroOfferPeriodValue: Bool? { LegacyField.flag(isInIntroOfferPeriod) }
    public var isUpgradedValue: Bool? { LegacyField.flag(isUpgraded) }
}

/// The renewal state of one subscription in a legacy receipt (`pending_renewal_info[]`).
public struct PendingRenewalInfo: Sendable, Hashable, Codable {
    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    /// `1` renews, `0` turned off.
    public var autoRenewStatus: String?
    public var expirationIntent: String?
    public var isInBillingRetryPeriod: String?
    public var gracePeriodExpiresDateMs: String?
    public var priceConsentStatus: String?
    public var priceIncreaseStatus: String?
    public var promotionalOfferId: String?
    public var offerCodeRefName: String?

    /// Every field defaults to nil (absent).
    public init(
        originalTransactionId: String? = nil,
        productId: String? = nil,
        autoRenewProductId: String? = nil,
        autoRenewStatus: String? = nil,
        expirationIntent: String? = nil,
        isInBillingRetryPeriod: String? = nil,
        gracePeriodExpiresDateMs: String? = nil,
        priceConsentStatus: String? = nil,
        priceIncreaseStatus: String? = nil,
        promotionalOfferId: String? = nil,
        offerCodeRefName: String? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDateMs = gracePeriodExpiresDateMs
        self.priceConsentStatus = priceConsentStatus
        self.priceIncreaseStatus = priceIncreaseStatus
        self.promotionalOfferId = promotionalOfferId
        self.offerCodeRefName = offerCodeRefName
    }

    enum CodingKeys: String, CodingKey {
        case originalTransactionId = "original_transaction_id"
        case productId = "product_id"
        case autoRenewProductId = "auto_renew_product_id"
        case autoRenewStatus = "auto_renew_status"
        case expirationIntent = "expiration_intent"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
        case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
        case priceConsentStatus = "price_consent_status"
        case priceIncreaseStatus = "price_increase_status"
        case promotionalOfferId = "promotional_offer_id"
        case offerCodeRefName = "offer_code_ref_name"
    }

    public var autoRenewStatusValue: AutoRenewStatus? {
        LegacyField.int32(autoRenewStatus).map(AutoRenewStatus.init(rawValue:))
    }
    public var expirationIntentValue: ExpirationIntent? {
        LegacyField.int32(expirationIntent).map(ExpirationIntent.init(rawValue:))
    }
    public var isInBillingRetryPeriodValue: Bool? { LegacyField.flag(isInBillingRetryPeriod) }
    public var gracePeriodExpiresDate: Int64? { LegacyField.milliseconds(gracePeriodExpiresDateMs) }
    public var priceConsentStatusValue: PriceIncreaseStatus? {
        LegacyField.int32(priceConsentStatus).map(PriceIncreaseStatus.init(rawValue:))
    }
    public var priceIncreaseStatusValue: PriceIncreaseStatus? {
        LegacyField.int32(priceIncreaseStatus).map(PriceIncreaseStatus.init(rawValue:))
    }
}
