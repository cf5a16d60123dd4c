/// The event a V2 notification reports (`notificationType`).
public struct NotificationTypeV2: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A subscription was bought (`INITIAL_BUY`), resubscribed, or an offer was redeemed on an inactive one.
    public static let subscribed = NotificationTypeV2(rawValue: "SUBSCRIBED")
    /// The customer changed the product the subscription renews to (`UPGRADE`, `DOWNGRADE`, or reverted).
    public static let didChangeRenewalPref = NotificationTypeV2(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// Auto-renew was turned on or off.
    public static let didChangeRenewalStatus = NotificationTypeV2(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// An offer was redeemed on an active subscription.
    public static let offerRedeemed = NotificationTypeV2(rawValue: "OFFER_REDEEMED")
    /// The subscription renewed (`BILLING_RECOVERY` after a billing failure).
    public static let didRenew = NotificationTypeV2(rawValue: "DID_RENEW")
    /// The subscription expired; the subtype gives the reason.
    public static let expired = NotificationTypeV2(rawValue: "EXPIRED")
    /// Renewal failed; `GRACE_PERIOD` means service continues for now.
    public static let didFailToRenew = NotificationTypeV2(rawValue: "DID_FAIL_TO_RENEW")
    /// The billing grace period ended without a renewal.
    public static let gracePeriodExpired = NotificationTypeV2(rawValue: "GRACE_PERIOD_EXPIRED")
    /// A price increase needs (`PENDING`) or got (`ACCEPTED`) the customer's consent.
    public static let priceIncrease = NotificationTypeV2(rawValue: "PRICE_INCREASE")
    /// A refund was granted; the transaction carries the revocation fields.
    public static let refund = NotificationTypeV2(rawValue: "REFUND")
    /// A refund request was declined.
    public static let refundDeclined = NotificationTypeV2(rawValue: "REFUND_DECLINED")
    /// A granted refund was reversed after a dispute; reinstate access.
    public static let refundReversed = NotificationTypeV2(rawValue: "REFUND_REVERSED")
    /// Apple asks for consumption information about a refund request.
    public static let consumptionRequest = NotificationTypeV2(rawValue: "CONSUMPTION_REQUEST")
    /// One subscription's renewal date was extended.
    public static let renewalExtended = NotificationTypeV2(rawValue: "RENEWAL_EXTENDED")
    /// Result of a mass renewal-date extension (`SUMMARY` or `FAILURE`).
    public static let renewalExtension = NotificationTypeV2(rawValue: "RENEWAL_EXTENSION")
    /// A Family Sharing entitlement is no longer shared with this customer.
    public static let revoke = NotificationTypeV2(rawValue: "REVOKE")
    /// Sent only when requested through the API.
    public static let test = NotificationTypeV2(rawValue: "TEST")
    /// External Purchase API token event.
    public static let externalPurchaseToken = NotificationTypeV2(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// A consumable, non-consumable or non-renewing subscription was bought.
    public static let oneTimeCharge = NotificationTypeV2(rawValue: "ONE_TIME_CHARGE")
    /// A parent or guardian withdrew consent; the payload is in `appData`.
    public static let rescindConsent = NotificationTypeV2(rawValue: "RESCIND_CONSENT")
    /// Advanced Commerce API: subscription metadata changed.
    public static let metadataUpdate = NotificationTypeV2(rawValue: "METADATA_UPDATE")
    /// Advanced Commerce API: a subscription was migrated.
    public static let migration = NotificationTypeV2(rawValue: "MIGRATION")
    /// Advanced Commerce API: a subscription price changed.
    public static let priceChange = NotificationTypeV2(rawValue: "PRICE_CHANGE")

    public static let known: [NotificationTypeV2] = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired,
        .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .refundReversed,
        .consumptionRequest, .renewalExtended, .renewalExtension, .revoke, .test, .externalPurchaseToken,
        .oneTimeCharge, .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]
}

/// Further detail on a V2 notification (`subtype`).
public struct NotificationSubtype: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let initialBuy = NotificationSubtype(rawValue: "INITIAL_BUY")
    public static let resubscribe = NotificationSubtype(rawValue: "RESUBSCRIBE")
    public static let downgrade = NotificationSubtype(rawValue: "DOWNGRADE")
    public static let upgrade = NotificationSubtype(rawValue: "UPGRADE")
    public static let autoRenewEnabled = NotificationSubtype(rawValue: "AUTO_RENEW_ENABLED")
    public static let autoRenewDisabled = NotificationSubtype(rawValue: "AUTO_RENEW_DISABLED")
    public static let voluntary = NotificationSubtype(rawValue: "VOLUNTARY")
    public static let billingRetry = NotificationSubtype(rawValue: "BILLING_RETRY")
    public static let priceIncrease = NotificationSubtype(rawValue: "PRICE_INCREASE")
    public static let gracePeriod = NotificationSubtype(rawValue: "GRACE_PERIOD")
    public static let pending = NotificationSubtype(rawValue: "PENDING")
    public static let accepted = NotificationSubtype(rawValue: "ACCEPTED")
    public static let billingRecovery = NotificationSubtype(rawValue: "BILLING_RECOVERY")
    public static let productNotForSale = NotificationSubtype(rawValue: "PRODUCT_NOT_FOR_SALE")
    public static let summary = NotificationSubtype(rawValue: "SUMMARY")
    public static let failure = NotificationSubtype(rawValue: "FAILURE")
    public static let unreported = NotificationSubtype(rawValue: "UNREPORTED")
    /// External purchase token created (documented 2025-06-26; missing from Apple's libraries).
    public static let created = NotificationSubtype(rawValue: "CREATED")
    /// External purchase token still active (documented 2025-06-26; missing from Apple's libraries).
    public static let activeTokenReminder = NotificationSubtype(rawValue: "ACTIVE_TOKEN_REMINDER")

    public static let known: [NotificationSubtype] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported, .created, .activeTokenReminder,
    ]
}

/// The event a legacy V1 notification reports (`notification_type`).
/// `RENEWAL` was retired in 2021 and is not listed; it still decodes as an unknown value.
public struct NotificationTypeV1: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple customer support cancelled (refunded) the transaction; V2 calls this `REFUND`.
    public static let cancel = NotificationTypeV1(rawValue: "CANCEL")
    public static let consumptionRequest = NotificationTypeV1(rawValue: "CONSUMPTION_REQUEST")
    public static let didChangeRenewalPref = NotificationTypeV1(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didChangeRenewalStatus = NotificationTypeV1(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let didFailToRenew = NotificationTypeV1(rawValue: "DID_FAIL_TO_RENEW")
    public static let didRecover = NotificationTypeV1(rawValue: "DID_RECOVER")
    public static let didRenew = NotificationTypeV1(rawValue: "DID_RENEW")
    public static let initialBuy = NotificationTypeV1(rawValue: "INITIAL_BUY")
    public static let interactiveRenewal = NotificationTypeV1(rawValue: "INTERACTIVE_RENEWAL")
    public static let priceIncreaseConsent = NotificationTypeV1(rawValue: "PRICE_INCREASE_CONSENT")
    public static let refund = NotificationTypeV1(rawValue: "REFUND")
    public static let revoke = NotificationTypeV1(rawValue: "REVOKE")

    public static let known: [NotificationTypeV1] = [
        .cancel, .consumptionRequest, .didChangeRenewalPref, .didChangeRenewalStatus, .didFailToRenew, .didRecover,
        .didRenew, .initialBuy, .interactiveRenewal, .priceIncreaseConsent, .refund, .revoke,
    ]
}

/// The state of an auto-renewable subscription (`status` in notification data and status responses).
public struct SubscriptionStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let active = SubscriptionStatus(rawValue: 1)
    public static let expired = SubscriptionStatus(rawValue: 2)
    public static let billingRetry = SubscriptionStatus(rawValue: 3)
    public static let billingGracePeriod = SubscriptionStatus(rawValue: 4)
    public static let revoked = SubscriptionStatus(rawValue: 5)

    public static let known: [SubscriptionStatus] = [
        .active, .expired, .billingRetry, .billingGracePeriod, .revoked,
    ]
}

/// Why the customer asked for the refund behind a `CONSUMPTION_REQUEST`.
public struct ConsumptionRequestReason: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let unintendedPurchase = ConsumptionRequestReason(rawValue: "UNINTENDED_PURCHASE")
    public static let fulfillmentIssue = ConsumptionRequestReason(rawValue: "FULFILLMENT_ISSUE")
    public static let unsatisfiedWithPurchase = ConsumptionRequestReason(rawValue: "UNSATISFIED_WITH_PURCHASE")
    public static let legal = ConsumptionRequestReason(rawValue: "LEGAL")
    public static let other = ConsumptionRequestReason(rawValue: "OTHER")

    public static let known: [ConsumptionRequestReason] = [
        .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other,
    ]
}

/// The kind of External Purchase custom-link token (`tokenType`).
public struct ExternalPurchaseTokenType: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let services = ExternalPurchaseTokenType(rawValue: "SERVICES")
    public static let acquisition = ExternalPurchaseTokenType(rawValue: "ACQUISITION")

    public static let known: [ExternalPurchaseTokenType] = [
        .services, .acquisition,
    ]
}

/// The outcome of one attempt to deliver a notification to the server.
public struct SendAttemptResult: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let success = SendAttemptResult(rawValue: "SUCCESS")
    public static let timedOut = SendAttemptResult(rawValue: "TIMED_OUT")
    public static let tlsIssue = SendAttemptResult(rawValue: "TLS_ISSUE")
    public static let circularRedirect = SendAttemptResult(rawValue: "CIRCULAR_REDIRECT")
    public static let noResponse = SendAttemptResult(rawValue: "NO_RESPONSE")
    public static let socketIssue = SendAttemptResult(rawValue: "SOCKET_ISSUE")
    public static let unsupportedCharset = SendAttemptResult(rawValue: "UNSUPPORTED_CHARSET")
    public static let invalidResponse = SendAttemptResult(rawValue: "INVALID_RESPONSE")
    public static let prematureClose = SendAttemptResult(rawValue: "PREMATURE_CLOSE")
    public static let unsuccessfulHTTPResponseCode = SendAttemptResult(rawValue: "UNSUCCESSFUL_HTTP_RESPONSE_CODE")
    public static let other = SendAttemptResult(rawValue: "OTHER")

    public static let known: [SendAttemptResult] = [
        .success, .timedOut, .tlsIssue, .circularRedirect, .noResponse, .socketIssue, .unsupportedCharset,
        .invalidResponse, .prematureClose, .unsuccessfulHTTPResponseCode, .other,
    ]
}
