/// A string-backed value whose set of values is open: the constants name what Apple documents,
/// and any other string passes through unchanged (so a new notification type never fails a decode).
/// The App Store's own vocabulary: Apple's payloads (the `AppStore` module) decode into these.
public protocol StringToken: RawRepresentable, Hashable, Sendable, Codable, Comparable,
    ExpressibleByStringLiteral, CustomStringConvertible where RawValue == String
{
    init(rawValue: String)
}

extension StringToken {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Apple's environment of a fact. Facts of different environments never mix in one evaluation.
///
/// V1 notifications spell production `PROD`; ``init(rawValue:)`` maps it to ``production``.
public struct Environment: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue == "PROD" ? "Production" : rawValue }

    public static let production: Environment = "Production"
    public static let sandbox: Environment = "Sandbox"
    public static let xcode: Environment = "Xcode"
    public static let localTesting: Environment = "LocalTesting"

    /// Whether Apple signs this environment's payloads (Production, Sandbox). Xcode's and
    /// LocalTesting's are only decoded (anyone can write them): they may show what a developer
    /// bought while testing, but nothing signed with a real key (an offer) rests on them.
    public var isSignedByApple: Bool { self == .production || self == .sandbox }
}

/// A V2 `notificationType` (`ResponseBodyV2DecodedPayload.notificationType`).
public struct NotificationType: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A subscription was bought (`INITIAL_BUY`), resubscribed, or an offer was redeemed on an inactive one.
    public static let subscribed: Self = "SUBSCRIBED"
    /// The customer changed the product the subscription renews to (`UPGRADE`, `DOWNGRADE`, or reverted).
    public static let didChangeRenewalPref: Self = "DID_CHANGE_RENEWAL_PREF"
    /// Auto-renew was turned on or off.
    public static let didChangeRenewalStatus: Self = "DID_CHANGE_RENEWAL_STATUS"
    /// An offer was redeemed on an active subscription.
    public static let offerRedeemed: Self = "OFFER_REDEEMED"
    /// The subscription renewed (`BILLING_RECOVERY` after a billing failure).
    public static let didRenew: Self = "DID_RENEW"
    /// The subscription expired; the subtype gives the reason.
    public static let expired: Self = "EXPIRED"
    /// Renewal failed; `GRACE_PERIOD` means service continues for now.
    public static let didFailToRenew: Self = "DID_FAIL_TO_RENEW"
    /// The billing grace period ended without a renewal.
    public static let gracePeriodExpired: Self = "GRACE_PERIOD_EXPIRED"
    /// A price increase needs (`PENDING`) or got (`ACCEPTED`) the customer's consent.
    public static let priceIncrease: Self = "PRICE_INCREASE"
    /// A refund was granted; the transaction carries the revocation fields.
    public static let refund: Self = "REFUND"
    /// A refund request was declined.
    public static let refundDeclined: Self = "REFUND_DECLINED"
    /// A granted refund was reversed after a dispute; reinstate access.
    public static let refundReversed: Self = "REFUND_REVERSED"
    /// Apple asks for consumption information about a refund request.
    public static let consumptionRequest: Self = "CONSUMPTION_REQUEST"
    /// One subscription's renewal date was extended.
    public static let renewalExtended: Self = "RENEWAL_EXTENDED"
    /// Result of a mass renewal-date extension (`SUMMARY` or `FAILURE`).
    public static let renewalExtension: Self = "RENEWAL_EXTENSION"
    /// A Family Sharing entitlement is no longer shared with this customer.
    public static let revoke: Self = "REVOKE"
    /// Sent only when requested through the API.
    public static let test: Self = "TEST"
    /// External Purchase API token event.
    public static let externalPurchaseToken: Self = "EXTERNAL_PURCHASE_TOKEN"
    /// A consumable, non-consumable or non-renewing subscription was bought.
    public static let oneTimeCharge: Self = "ONE_TIME_CHARGE"
    /// A parent or guardian withdrew consent; the payload is in `appData`.
    public static let rescindConsent: Self = "RESCIND_CONSENT"
    /// Advanced Commerce API: subscription metadata changed.
    public static let metadataUpdate: Self = "METADATA_UPDATE"
    /// Advanced Commerce API: a subscription was migrated.
    public static let migration: Self = "MIGRATION"
    /// Advanced Commerce API: a subscription price changed.
    public static let priceChange: Self = "PRICE_CHANGE"

    /// The 23 types Apple documents (as of 2026).
    public static let allDocumented: [NotificationType] = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired,
        .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .refundReversed,
        .consumptionRequest, .renewalExtended, .renewalExtension, .revoke, .test, .externalPurchaseToken,
        .oneTimeCharge, .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]
}

/// A V2 notification `subtype`.
public struct NotificationSubtype: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let initialBuy: Self = "INITIAL_BUY"
    public static let resubscribe: Self = "RESUBSCRIBE"
    public static let upgrade: Self = "UPGRADE"
    public static let downgrade: Self = "DOWNGRADE"
    public static let autoRenewEnabled: Self = "AUTO_RENEW_ENABLED"
    public static let autoRenewDisabled: Self = "AUTO_RENEW_DISABLED"
    public static let billingRecovery: Self = "BILLING_RECOVERY"
    public static let voluntary: Self = "VOLUNTARY"
    public static let billingRetry: Self = "BILLING_RETRY"
    public static let priceIncrease: Self = "PRICE_INCREASE"
    public static let productNotForSale: Self = "PRODUCT_NOT_FOR_SALE"
    public static let gracePeriod: Self = "GRACE_PERIOD"
    public static let pending: Self = "PENDING"
    public static let accepted: Self = "ACCEPTED"
    public static let summary: Self = "SUMMARY"
    public static let failure: Self = "FAILURE"
    public static let unreported: Self = "UNREPORTED"
    /// External purchase token created (documented 2025-06-26; missing from Apple's libraries).
    public static let created: Self = "CREATED"
    /// External purchase token still active (documented 2025-06-26; missing from Apple's libraries).
    public static let activeTokenReminder: Self = "ACTIVE_TOKEN_REMINDER"

    /// The subtypes Apple documents (as of 2026).
    public static let allDocumented: [NotificationSubtype] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported, .created, .activeTokenReminder,
    ]
}

/// A V1 `notification_type` (deprecated by Apple on 2023-06-05, still sent to apps that chose V1).
public struct V1NotificationType: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let cancel: Self = "CANCEL"
    public static let consumptionRequest: Self = "CONSUMPTION_REQUEST"
    public static let didChangeRenewalPref: Self = "DID_CHANGE_RENEWAL_PREF"
    public static let didChangeRenewalStatus: Self = "DID_CHANGE_RENEWAL_STATUS"
    public static let didFailToRenew: Self = "DID_FAIL_TO_RENEW"
    public static let didRecover: Self = "DID_RECOVER"
    public static let didRenew: Self = "DID_RENEW"
    public static let initialBuy: Self = "INITIAL_BUY"
    public static let interactiveRenewal: Self = "INTERACTIVE_RENEWAL"
    public static let priceIncreaseConsent: Self = "PRICE_INCREASE_CONSENT"
    public static let refund: Self = "REFUND"
    public static let revoke: Self = "REVOKE"
    /// Removed by Apple on 2021-03-10; still decoded for old ledgers.
    public static let renewal: Self = "RENEWAL"

    /// The 12 current V1 types.
    public static let allDocumented: [V1NotificationType] = [
        .cancel, .consumptionRequest, .didChangeRenewalPref, .didChangeRenewalStatus, .didFailToRenew,
        .didRecover, .didRenew, .initialBuy, .interactiveRenewal, .priceIncreaseConsent, .refund, .revoke,
    ]
}

/// `offerDiscountType`: `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
public struct OfferDiscountType: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let freeTrial: Self = "FREE_TRIAL"
    public static let payAsYouGo: Self = "PAY_AS_YOU_GO"
    public static let payUpFront: Self = "PAY_UP_FRONT"
    public static let oneTime: Self = "ONE_TIME"

    public static let allDocumented: [OfferDiscountType] = [.freeTrial, .payAsYouGo, .payUpFront, .oneTime]
}

/// `revocationType` (since December 2025): `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
public struct RevocationType: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let refundFull: Self = "REFUND_FULL"
    public static let refundProrated: Self = "REFUND_PRORATED"
    public static let familyRevoke: Self = "FAMILY_REVOKE"

    public static let allDocumented: [RevocationType] = [.refundFull, .refundProrated, .familyRevoke]
}

/// `transactionReason`: `PURCHASE` or `RENEWAL`.
public struct TransactionReason: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchase: Self = "PURCHASE"
    public static let renewal: Self = "RENEWAL"

    public static let allDocumented: [TransactionReason] = [.purchase, .renewal]
}

/// The kind of in-app product (`type` of a transaction).
public enum ProductType: String, Hashable, Sendable, Codable, CaseIterable {
    case autoRenewable
    case nonConsumable
    case consumable
    case nonRenewing
}

/// `inAppOwnershipType`: bought by this account, or reached it through Family Sharing.
public enum Ownership: String, Hashable, Sendable, Codable, CaseIterable {
    case purchased
    case familyShared
}

/// `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back, 5 retention (an offer
/// that kept a cancelling subscriber).
public enum OfferType: Int, Hashable, Sendable, Codable, CaseIterable {
    case introductory = 1
    case promotional = 2
    case offerCode = 3
    case winBack = 4
    case retentionOffer = 5
}
