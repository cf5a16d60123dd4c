import AppStore
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import Foundation

/// How fast subscription periods pass. Apple's accelerated rates (StoreKit testing and the sandbox's
/// "monthly renewal every five minutes" …) map a week and a month to fixed short lengths; longer periods
/// scale with the month (two months = 2×, a year = 12×). Grace periods, billing retry and renewal-date
/// extensions are not accelerated here.
public enum RenewalRate: String, Sendable, Codable, Hashable, CaseIterable {
    /// Calendar time.
    case realTime
    /// Week 3 min, month 5 min, year 1 h (the sandbox's default accelerated rate).
    case monthlyEveryFiveMinutes
    /// Week 10 min, month 30 min, year 6 h.
    case monthlyEveryThirtyMinutes
    /// Week 15 min, month 1 h, year 12 h.
    case monthlyEveryHour

    /// (week, month) in milliseconds, nil for real time.
    var scale: (week: Int64, month: Int64)? {
        switch self {
        case .realTime: nil
        case .monthlyEveryFiveMinutes: (3 * Milliseconds.minute, 5 * Milliseconds.minute)
        case .monthlyEveryThirtyMinutes: (10 * Milliseconds.minute, 30 * Milliseconds.minute)
        case .monthlyEveryHour: (15 * Milliseconds.minute, Milliseconds.hour)
        }
    }

    /// The end of a period of length `period` starting at `start`.
    public func end(of period: ISODuration, from start: Int64) -> Int64 {
        guard let (week, month) = scale else { return period.added(to: start) }
        let months = Int64(period.years * 12 + period.months)
        let days = Int64(period.days)
        let clock = Int64(period.hours) * Milliseconds.hour + Int64(period.minutes) * Milliseconds.minute
            + Int64(period.seconds) * Milliseconds.second
        // Days count as sevenths of a week; sub-day parts are scaled as a day would be.
        return start + months * month + days * week / 7 + clock * week / (7 * Milliseconds.day)
    }
}

/// A customer of the simulated store.
public struct SimulatedCustomer: Sendable, Codable, Hashable {
    /// The simulator's name for this Apple ID (e.g. `alice`).
    public var id: String
    /// ISO 3166-1 alpha-3 storefront, e.g. `USA`.
    public var storefront: String
    /// Whether charges succeed; a failing method makes renewals fail into billing retry.
    public var paymentSucceeds: Bool
    /// The family group this customer belongs to.
    public var familyId: String?
    /// Subscription groups in which this customer already used an introductory offer.
    public var introUsedInGroups: Set<String> = []
}

/// A Family Sharing group: an organizer and up to five more members.
public struct FamilyGroup: Sendable, Codable, Hashable {
    /// Family Sharing allows the organizer and up to five others.
    public static let maximumMembers = 6
    /// The identifier.
    public var id: String
    /// Customer ids, organizer first.
    public var members: [String]
}

/// Where a subscription is in its life, matching the `status` field of notifications.
///
/// The transitions below are the only ones the store makes (tested row by row in
/// `SubscriptionStateTransitionTests`). A family member's view copies its purchaser's state, except that
/// it alone becomes ``revoked`` when sharing stops.
public enum SubscriptionState: String, Sendable, Codable, Hashable {
    /// Paid up to `expiresDate`.
    ///
    /// Can transition to: ``active`` (renewal, offer redeemed, upgrade, renewal-date extension);
    /// ``gracePeriod`` (renewal charge fails, the app has a grace period); ``billingRetry`` (renewal
    /// charge fails, no grace period); ``expired`` (auto-renew off, price increase declined, product off
    /// sale, at renewal); ``revoked`` (the current transaction is refunded).
    case active
    /// The renewal charge failed and the grace period is over (or there is none); no access.
    ///
    /// Can transition to: ``active`` (payment method fixed: `BILLING_RECOVERY`, period starts then);
    /// ``expired`` (60 days after the failed renewal); ``revoked`` (the last transaction is refunded).
    case billingRetry
    /// The renewal charge failed, access continues until `gracePeriodExpires`.
    ///
    /// Can transition to: ``active`` (payment method fixed, the period starts at the old expiry; or an
    /// upgrade or offer redeemed); ``billingRetry`` (grace ends); ``expired`` (the 60-day retry window
    /// ends first); ``revoked`` (the last transaction is refunded).
    case gracePeriod
    /// Ended without a refund.
    ///
    /// Can transition to: ``active`` (resubscribe, same original transaction); ``revoked`` (the last
    /// transaction is refunded after expiry).
    case expired
    /// The last transaction was refunded (or, for a family view, sharing stopped).
    ///
    /// Can transition to: ``active`` (refund reversed before the period's end, or resubscribe);
    /// ``expired`` (refund reversed after the period's end).
    case revoked

    /// The App Store `status` value (1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked).
    public var status: SubscriptionStatus {
        switch self {
        case .active: .active
        case .expired: .expired
        case .billingRetry: .billingRetry
        case .gracePeriod: .billingGracePeriod
        case .revoked: .revoked
        }
    }
}

/// The offer applied to the current (and possibly following) periods.
public struct AppliedOffer: Sendable, Codable, Hashable {
    /// Introductory, promotional, offer code or win-back.
    public var type: OfferType
    /// The offer terms.
    public var offer: SubscriptionOffer
    /// Billed offer periods still to come after the current one.
    public var remainingPeriods: Int
}

/// A pending price increase on a subscription.
public struct PendingPriceIncrease: Sendable, Codable, Hashable {
    /// The price from the next renewal, milli-units.
    public var newPrice: Int64
    /// Whether a price increase needs consent (default true).
    public var consentRequired: Bool
    /// nil: no answer yet; true: accepted (or no consent needed); false: declined.
    public var accepted: Bool?
}

/// One auto-renewable subscription (an original transaction in a group), the purchaser's or a family member's view of it.
public struct SimulatedSubscription: Sendable, Codable, Hashable {
    /// The original transaction id (stable across renewals).
    public var originalTransactionId: String
    /// The customer holding this subscription (or family view).
    public var customerId: String
    /// The subscription group.
    public var groupId: String
    /// The product of the current period.
    public var productId: String
    /// The product the next renewal will be.
    public var autoRenewProductId: String
    /// Whether auto-renew is on.
    public var autoRenew: Bool
    /// Where the subscription is in its life.
    public var state: SubscriptionState
    /// When the original transaction was bought.
    public var originalPurchaseDate: Int64
    /// Start of the current period.
    public var purchaseDate: Int64
    /// End of the current period (the renewal date).
    public var expiresDate: Int64
    /// Start of the latest continuous run.
    public var recentStartDate: Int64
    /// The transaction of the current period.
    public var latestTransactionId: String
    /// The offer applied to the current period.
    public var offer: AppliedOffer?
    /// Why it expired (or will).
    public var expirationIntent: ExpirationIntent?
    /// When billing retry began (the failed renewal date).
    public var billingRetryStart: Int64?
    /// End of the billing grace period.
    public var gracePeriodExpires: Int64?
    /// A pending price increase.
    public var priceIncrease: PendingPriceIncrease?
    /// A UUID linking the purchase to an app account.
    public var appAccountToken: String?
    /// For a family member's view: the purchaser's original transaction id.
    public var sharedFrom: String?
    /// For a purchaser: whether the subscription is shared with the family.
    public var sharingEnabled: Bool
    /// The renewal date was extended (by a renewal-date extension).
    public var extendedDays: Int = 0
    /// Auto-renew as it was before a refund revoked the subscription (restored if the refund is reversed).
    public var autoRenewBeforeRefund: Bool?
    /// An offer redeemed with a downgrade or crossgrade, applied from the next renewal.
    public var pendingOffer: AppliedOffer?
    /// Whether this is a family member's view of someone else's purchase.
    public var isFamilyShared: Bool { sharedFrom != nil }
}

/// A notification the store decided to send, before signing.
public struct PendingNotification: Sendable, Hashable {
    /// The notification type.
    public var type: NotificationType
    /// The notification subtype, if any.
    public var subtype: NotificationSubtype?
    /// `data.status`; nil for types without one.
    public var status: SubscriptionStatus?
    /// The transaction to sign into `signedTransactionInfo`.
    public var transaction: JWSTransactionDecodedPayload?
    /// The renewal info to sign into `signedRenewalInfo`.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// The mass-extension summary (instead of `data`).
    public var summary: Summary?
    /// `consumptionRequestReason` for `CONSUMPTION_REQUEST`.
    public var consumptionRequestReason: ConsumptionRequestReason?
    /// The customer it concerns (nil for TEST and SUMMARY).
    public var customerId: String?
    /// When the event happened (virtual time).
    public var date: Int64
}
