// Timeline: a customer's complete facts → what happened to them, in order. Events are read from
// the facts in hindsight (a period end is an expiry only when no renewal and no billing issue
// follows it), never from two answers of partial histories compared.

/// The customer's event timeline in `environment` up to `now`, ordered (``CustomerEvent/happensBefore(_:_:)``).
///
/// Pure and order-independent: any permutation of `facts`, with any duplicates, gives the same
/// events (only ``CustomerEvent/causeIndex`` names a position). What it decides:
/// - a subscription's first transaction is `started`; each later one `renewed` when it starts at or
///   before the previous period's end (a product change at renewal adds `product_changed`), or
///   `product_changed` (`immediate`) when it replaces an upgraded one;
/// - a period end not followed by a renewal is a `billing_issue` at the period end when renewal info
///   or a `DID_FAIL_TO_RENEW` signed in that period or after shows billing retry or a grace period
///   (then `grace_period_expired` when the grace period ends before a recovery, `recovered` with the
///   renewal that ends it, `expired` with reason `billingError` when retry ends first), else `expired`;
///   an end is only decided once a fact of the subscription signed at or after it is known (a renewal
///   may still be on its way until then);
/// - `auto_renew_enabled`/`disabled` when `autoRenewStatus` differs between successive renewal
///   infos, `price_increase` when `priceIncreaseStatus` changes to a value, `extended` when a
///   transaction is re-signed with a later expiry, `refunded`/`revoked`/`refund_reversed` when a
///   transaction version gains or loses its revocation, `offer_redeemed` for a transaction in a
///   promotional, offer-code or win-back offer; `purchase.*` for other products.
public func eventTimeline(facts: [Fact], policy: Policy, now: Int64, environment: Environment) -> [CustomerEvent] {
    var builder = TimelineBuilder(policy: policy, now: now, environment: environment)
    builder.collect(facts)
    return builder.build()
}

/// A transaction version as the timeline reads it (V2 transaction or V1 receipt entry).
struct TimelineTx {
    var id: String
    var otid: String
    var productId: String
    var type: ProductType
    var purchaseDate: Int64
    var originalPurchaseDate: Int64?
    var expiresDate: Int64?
    var signedDate: Int64
    /// nil for an upgraded transaction (its revocation marks the upgrade).
    var revocationDate: Int64?
    var familyRevoke: Bool
    var isUpgraded: Bool
    var details: [String: String]
    var index: Int
    /// The first version's signed date and index: what revealed the transaction (a later version,
    /// an extension or a refund, is an event of its own).
    var revealed: (date: Int64, index: Int) = (0, 0)

    /// Versions of one transaction in signed order; equal keys are one version.
    var versionKey: [Int64] { [signedDate, revocationDate ?? -1, expiresDate ?? -1, isUpgraded ? 1 : 0] }
}

/// A renewal-info version (V2 renewal info or V1 pending renewal).
struct TimelineInfo {
    var signedDate: Int64
    var autoRenew: Bool
    var expirationIntent: Int?
    var inRetry: Bool?
    var graceEnd: Int64?
    var priceIncrease: Int?
    /// V1 in billing retry without a grace period end: the policy's fallback days apply.
    var fallbackGrace = false
    var index: Int

    var key: [Int64] {
        [signedDate, autoRenew ? 1 : 0, inRetry.map { $0 ? 1 : 0 } ?? -1, graceEnd ?? -1, priceIncrease.map(Int64.init) ?? -1,
         expirationIntent.map(Int64.init) ?? -1]
    }

    func showsIssue(periodEnd: Int64) -> Bool { inRetry == true || (graceEnd ?? .min) > periodEnd }

    /// The grace period end it gives for the period ending at `periodEnd`, if after it.
    func grace(periodEnd: Int64, fallbackDays: Int) -> Int64? {
        if fallbackGrace { return fallbackDays > 0 ? periodEnd.plus(Int64(fallbackDays) * Time.day) : nil }
        return graceEnd.flatMap { $0 > periodEnd ? $0 : nil }
    }
}

/// A notification about a subscription: what it says of billing.
struct TimelineNote {
    enum Kind { case failedToRenew, expired, other }
    var kind: Kind
    var signedDate: Int64
    var index: Int
}

struct TimelineBuilder {
    let policy: Policy
    let now: Int64
    let environment: Environment

    var versions: [String: [TimelineTx]] = [:]
    var infos: [String: [TimelineInfo]] = [:]
    var notes: [String: [TimelineNote]] = [:]
    /// Every fact of a subscription by signed date (what decides a period end).
    var signed: [String: [(date: Int64, index: Int)]] = [:]
    /// Google Play's purchases (PlayTimeline.swift).
    var play = PlayTimelineFacts()
    var events: [CustomerEvent] = []

    init(policy: Policy, now: Int64, environment: Environment) {
        self.policy = policy
        self.now = now
        self.environment = environment
    }

    mutating func collect(_ facts: [Fact]) {
        for (index, fact) in facts.enumerated() where fact.environment == environment {
            switch fact {
            case .transaction(let t): add(Self.tx(t, index: index))
            case .receiptEntry(let e): add(tx(e, index: index))
            case .renewalInfo(let r):
                add(
                    TimelineInfo(
                        signedDate: r.signedDate, autoRenew: r.autoRenewStatus, expirationIntent: r.expirationIntent,
                        inRetry: r.isInBillingRetryPeriod, graceEnd: r.gracePeriodExpiresDate, priceIncrease: r.priceIncreaseStatus,
                        index: index), otid: r.originalTransactionId)
            case .pendingRenewal(let r):
                add(
                    TimelineInfo(
                        signedDate: r.receiptDate, autoRenew: r.autoRenewStatus, expirationIntent: r.expirationIntent,
                        inRetry: r.isInBillingRetryPeriod, graceEnd: r.gracePeriodExpiresDate,
                        priceIncrease: r.priceIncreaseStatus ?? r.priceConsentStatus, index: index),
                    otid: r.originalTransactionId, fallbackGrace: true)
            case .notification(let n):
                guard let otid = n.originalTransactionId else { continue }
                let kind: TimelineNote.Kind = n.type == .didFailToRenew ? .failedToRenew : n.type == .expired ? .expired : .other
                notes[otid, default: []].append(TimelineNote(kind: kind, signedDate: n.signedDate, index: index))
                signed[otid, default: []].append((n.signedDate, index))
            case .v1Notification(let n):
                guard let otid = n.originalTransactionId else { continue }
                let kind: TimelineNote.Kind = n.type == .didFailToRenew ? .failedToRenew : .other
                notes[otid, default: []].append(TimelineNote(kind: kind, signedDate: n.date, index: index))
                signed[otid, default: []].append((n.date, index))
            case .playSubscription, .playProduct, .playVoided: collectPlay(fact, index: index)
            case .appTransaction, .consumableSpend, .promotionalGrant, .promotionalGrantEnd, .playOrder: continue
            }
        }
    }

    private mutating func add(_ t: TimelineTx) {
        var t = t
        t.revealed = (t.signedDate, t.index)
        versions[t.id, default: []].append(t)
        signed[t.otid, default: []].append((t.signedDate, t.index))
    }

    private mutating func add(_ info: TimelineInfo, otid: String, fallbackGrace: Bool = false) {
        var info = info
        // V1 may omit the grace period end: the policy's fallback days apply (as the answer does).
        info.fallbackGrace = fallbackGrace && info.inRetry == true && info.graceEnd == nil
        infos[otid, default: []].append(info)
        signed[otid, default: []].append((info.signedDate, info.index))
    }

    static func tx(_ t: TransactionFact, index: Int) -> TimelineTx {
        let periodType: String
        switch t.offerType {
        case .introductory?: periodType = t.offerDiscountType == .freeTrial ? "trial" : "intro"
        case .promotional?, .offerCode?, .winBack?, .retentionOffer?: periodType = "offer"
        case nil: periodType = "normal"
        }
        var details = analytics(
            price: t.price, currency: t.currency, periodType: periodType, storefront: t.storefront, offerId: t.offerIdentifier,
            offerType: t.offerType.map(offerName), transactionId: t.transactionId)
        if let discount = t.offerDiscountType { details["offerDiscountType"] = discount.rawValue }
        return TimelineTx(
            id: t.transactionId, otid: t.originalTransactionId, productId: t.productId, type: t.productType,
            purchaseDate: t.purchaseDate, originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate,
            signedDate: t.signedDate, revocationDate: t.isUpgraded ? nil : t.revocationDate,
            familyRevoke: t.revocationType == .familyRevoke || (t.ownership == .familyShared && t.revocationDate != nil),
            isUpgraded: t.isUpgraded, details: details, index: index)
    }

    func tx(_ e: ReceiptEntryFact, index: Int) -> TimelineTx {
        let offerType: String? = e.promotionalOfferId != nil ? "promotional" : e.offerCodeRefName != nil ? "offerCode" : nil
        let periodType = e.isTrialPeriod ? "trial" : e.isInIntroOfferPeriod ? "intro" : offerType != nil ? "offer" : "normal"
        let type = policy.products[e.productId]?.type ?? (e.expiresDate != nil ? .autoRenewable : .nonConsumable)
        return TimelineTx(
            id: e.transactionId, otid: e.originalTransactionId, productId: e.productId, type: type, purchaseDate: e.purchaseDate,
            originalPurchaseDate: e.originalPurchaseDate, expiresDate: e.expiresDate, signedDate: e.receiptDate,
            revocationDate: e.isUpgraded ? nil : e.cancellationDate, familyRevoke: e.ownership == .familyShared && e.cancellationDate != nil,
            isUpgraded: e.isUpgraded,
            details: Self.analytics(
                price: nil, currency: nil, periodType: periodType, storefront: nil, offerId: e.promotionalOfferId ?? e.offerCodeRefName,
                offerType: offerType, transactionId: e.transactionId),
            index: index)
    }

    static func offerName(_ type: OfferType) -> String {
        switch type {
        case .introductory: "introductory"
        case .promotional: "promotional"
        case .offerCode: "offerCode"
        case .winBack: "winBack"
        case .retentionOffer: "retentionOffer"
        }
    }

    /// The fields every subscription and purchase event carries (those Apple gave).
    static func analytics(
        price: Int64?, currency: String?, periodType: String, storefront: String?, offerId: String?, offerType: String?,
        transactionId: String
    ) -> [String: String] {
        var details = ["store": "appStore", "periodType": periodType, "transactionId": transactionId]
        if let price { details["price"] = Self.decimal(price) }
        details["currency"] = currency
        details["storefront"] = storefront
        details["offerId"] = offerId
        details["offerType"] = offerType
        return details
    }

    /// Apple's milli-units as a decimal string: 9990 → "9.99", 5000 → "5".
    static func decimal(_ milli: Int64) -> String {
        let negative = milli < 0
        let magnitude = milli.magnitude
        var text = String(magnitude / 1000)
        var fraction = String(magnitude % 1000)
        if fraction != "0" {
            fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return negative ? "-" + text : text
    }
}
