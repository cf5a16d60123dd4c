import EntitledCrypto
import Entitlements
import Foundation

/// What caused a projection change: the committed message and its facts, as events cite them.
struct EventCause: Sendable {
    /// The `notifications` row (nil when the message was not kept).
    var notificationID: Int64?
    var notificationUUID: String?
    var notificationType: String?
    var subtype: String?
    var bundleId: String?
    /// The facts' transaction ids, in the order they came.
    var transactionIds: [String]
    /// Digest of the newest fact (a key part of events only a fact distinguishes, e.g. a toggle).
    var factDigest: String?
    /// When it happened at Apple: the newest fact's signed date (ms), or the receipt time.
    var occurredAt: Int64
    /// The earliest signed date of the message's facts, or of the facts of a subscription it linked:
    /// the customer's history is re-derived from there.
    var earliestSignedDate: Int64
}

/// An event derived from a change of a customer's answer, ready for the outbox.
struct DerivedEvent: Sendable, Hashable {
    /// Stable: the same for the same customer, change and (where it matters) causing fact.
    var id: String
    var type: String
    var environment: String?
    var originalTransactionId: String?
    var productId: String?
    var entitlements: [String]
    /// Type-specific fields (`from`, `to`, `timing`, `reason`, `kind`), all strings.
    var details: [String: String]
    /// When it happened, when the change itself says (an expiry: the instant access ended);
    /// otherwise the causing fact's time.
    var occurredAt: Int64? = nil
}

/// What a customer's facts say beyond the answers events compare, up to one step of the history.
struct EventHistory: Sendable {
    /// Each subscription's original purchase date (every transaction of it carries it).
    var originalPurchase: [String: Int64] = [:]
    /// Each subscription's newest renewal info's `expirationIntent`, when it has one.
    var expirationIntent: [String: Int] = [:]
    /// Each configured product's entitlements: what an event of it affects, whatever else the
    /// answer of the moment holds.
    var entitlements: [String: [String]] = [:]
    /// Purchases (no subscription) refunded or revoked, by their transaction: a refund of a pass
    /// that no longer shows in the answer (a later one stacked on it) is still an event.
    var revokedPurchases: [String: RevokedPurchase] = [:]

    struct RevokedPurchase: Sendable, Hashable {
        var productId: String
        var environment: String
        var date: Int64
        /// `refunded`, or `revoked` (Family Sharing stopped).
        var status: String
    }

    /// Notes what `fact` says; facts come in signed order, so a newer renewal info wins.
    mutating func note(_ fact: Fact) {
        switch fact {
        case .transaction(let t):
            if let date = t.originalPurchaseDate ?? (t.transactionId == t.originalTransactionId ? t.purchaseDate : nil) {
                originalPurchase[t.originalTransactionId] = date
            }
            if t.productType == .nonRenewing || t.productType == .nonConsumable {
                revokedPurchases[t.originalTransactionId] = t.revocationDate.map {
                    RevokedPurchase(
                        productId: t.productId, environment: t.environment.rawValue, date: $0,
                        status: t.ownership == .familyShared ? "revoked" : "refunded")
                }
            }
        case .receiptEntry(let e):
            if let date = e.originalPurchaseDate ?? (e.transactionId == e.originalTransactionId ? e.purchaseDate : nil) {
                originalPurchase[e.originalTransactionId] = date
            }
        case .renewalInfo(let r): expirationIntent[r.originalTransactionId] = r.expirationIntent
        case .pendingRenewal(let r): expirationIntent[r.originalTransactionId] = r.expirationIntent
        default: break
        }
    }
}

/// Derives events from a customer's projection before and after a committed change.
///
/// Events describe changes of the answer, not Apple's notification types, so a duplicate or a
/// replay (no change) gives none, and an event's id depends on the customer and the change (the
/// subscription, the new status, expiry or product), so the same change reached again — another
/// delivery order, a re-ingest — is the same event and the outbox keeps it once.
enum EventDerivation {
    /// - Parameter instant: when the change happened (the instant of the facts that show it): part of
    ///   the key of events only a fact distinguishes (an auto-renew toggle).
    /// - Parameter periods: each subscription's current period before and after (what the rows do
    ///   not hold): a renewal is a new transaction and an extension the same one lasting longer; an
    ///   offer shows as a new transaction's period type, a price increase as its status changing.
    /// - Parameter history: what the facts themselves say (when each subscription started, why it
    ///   expired): an event's instant and details come from the facts, not from the answers compared,
    ///   so that the same change found from a partial history (facts still on their way) is the same event.
    static func events(
        appUserId: String, before: CustomerProjection?, after: CustomerProjection, instant: Int64?,
        periods: (before: [String: SubscriptionPeriod], after: [String: SubscriptionPeriod]) = ([:], [:]),
        history: EventHistory = EventHistory(), previousHistory: EventHistory? = nil
    ) -> [DerivedEvent] {
        var events: [DerivedEvent] = []
        let old = Dictionary((before?.subscriptions ?? []).map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        func entitlements(_ otid: String?, products: [String] = []) -> [String] {
            let configured = products.compactMap { history.entitlements[$0] }
            guard configured.isEmpty else { return Set(configured.joined()).sorted() }
            return after.entitlements.filter { $0.originalTransactionId == otid && otid != nil }.map(\.entitlement).sorted()
        }
        func add(_ type: String, _ row: SubscriptionRow, key: [String], details: [String: String] = [:], at instant: Int64? = nil) {
            let products = [row.productId] + (details["from"].map { type == "subscription.product_changed" ? [$0] : [] } ?? [])
            let ended = type == "subscription.expired" ? max(row.expiresAt ?? 0, row.graceUntil ?? 0) : instant ?? 0
            events.append(
                DerivedEvent(
                    id: eventID(appUserId: appUserId, type: type, key: [row.originalTransactionId] + key), type: type,
                    environment: row.environment, originalTransactionId: row.originalTransactionId, productId: row.productId,
                    entitlements: entitlements(row.originalTransactionId, products: products), details: details,
                    occurredAt: ended > 0 ? ended : nil))
        }
        let expiry = { (row: SubscriptionRow) in String(row.expiresAt ?? 0) }
        for row in after.subscriptions {
            let period = periods.after[row.originalTransactionId]
            let previousPeriod = periods.before[row.originalTransactionId]
            defer { periodEvents(row, period: period, previous: previousPeriod) { add($0, $1, key: $2, details: $3, at: $4) } }
            let reason = history.expirationIntent[row.originalTransactionId]
            guard let previous = old[row.originalTransactionId] else {
                // It started when its original transaction was bought, whichever fact showed it first.
                add("subscription.started", row, key: [], at: history.originalPurchase[row.originalTransactionId])
                if let type = statusEvent(from: nil, to: row.status, intent: reason) {
                    add(type.name, row, key: [row.status, expiry(row)], details: type.details)
                }
                continue
            }
            // A change that came with a new transaction happened when that transaction was bought.
            let bought = period.flatMap { $0.transactionId != previousPeriod?.transactionId ? $0.purchaseDate : nil }
            let productChanged = previous.productId != row.productId
            if productChanged {
                // A change at renewal shows with the renewal's new period; an upgrade at once.
                let timing = (row.expiresAt ?? 0) > (previous.expiresAt ?? 0) && previous.status == row.status ? "atRenewal" : "immediate"
                add("subscription.product_changed", row, key: [previous.productId, row.productId, expiry(row)],
                    details: ["from": previous.productId, "to": row.productId, "timing": timing], at: bought)
            }
            if row.status == "active", previous.status != "refunded", previous.status != "revoked",
                (row.expiresAt ?? 0) > (previous.expiresAt ?? 0)
            {
                if let period, period.transactionId == previousPeriod?.transactionId {
                    // The same transaction lasting longer: Apple extended the renewal date.
                    if !productChanged {
                        add("subscription.extended", row, key: [period.transactionId, expiry(row)],
                            details: ["from": String(previous.expiresAt ?? 0), "to": expiry(row)])
                    }
                } else {
                    // A new period is a renewal also when the product changed with it or it ended a
                    // billing issue: a history that misses that change (still on its way) shows the
                    // same renewal.
                    add("subscription.renewed", row, key: [expiry(row)], at: bought)
                }
            }
            if previous.status != row.status, let type = statusEvent(from: previous.status, to: row.status, intent: reason) {
                add(type.name, row, key: [row.status, expiry(row)], details: type.details, at: type.name == "subscription.recovered" ? bought : nil)
            }
            if previous.autoRenew != row.autoRenew {
                add(row.autoRenew ? "subscription.auto_renew_enabled" : "subscription.auto_renew_disabled", row,
                    key: [String(row.autoRenew), instant.map { String($0) } ?? ""])
            }
        }
        // Purchases that are no subscription: entitlement rows of a transaction no subscription row has.
        let subscriptionIDs = Set(after.subscriptions.map(\.originalTransactionId)).union(old.keys)
        let oldPurchases = Dictionary(
            (before?.entitlements ?? []).compactMap { row in row.originalTransactionId.map { ($0, row) } }, uniquingKeysWith: { a, _ in a })
        var seen = Set<String>()
        for row in after.entitlements {
            guard let otid = row.originalTransactionId, !subscriptionIDs.contains(otid), seen.insert(otid).inserted else { continue }
            let type: String
            switch (oldPurchases[otid]?.status, row.status) {
            case (nil, _) where row.active, ("refunded", "active"), ("revoked", "active"): type = "purchase.completed"
            case (let was, "refunded") where was != "refunded" && history.revokedPurchases[otid] == nil,
                (let was, "revoked") where was != "revoked" && history.revokedPurchases[otid] == nil:
                type = "purchase.refunded"
            default: continue
            }
            events.append(
                DerivedEvent(
                    id: eventID(appUserId: appUserId, type: type, key: [otid, row.status]), type: type, environment: row.environment,
                    originalTransactionId: otid, productId: row.productId,
                    entitlements: entitlements(otid, products: row.productId.map { [$0] } ?? []), details: [:]))
        }
        // A refund the facts tell, whether or not the answer still shows the purchase.
        for (otid, refund) in history.revokedPurchases.sorted(by: { $0.key < $1.key })
        where previousHistory?.revokedPurchases[otid] == nil && !subscriptionIDs.contains(otid) {
            let type = "purchase.refunded"
            events.append(
                DerivedEvent(
                    id: eventID(appUserId: appUserId, type: type, key: [otid, refund.status]), type: type,
                    environment: refund.environment, originalTransactionId: otid, productId: refund.productId,
                    entitlements: entitlements(otid, products: [refund.productId]), details: [:], occurredAt: refund.date))
        }
        return events
    }

    /// Offer types whose redemption is an event (a trial or introductory offer shows on `started`).
    static let redeemedOffers: Set<String> = ["promotional", "offerCode", "winBack"]

    /// Events of a subscription's current period changing: an offer redeemed (a new transaction in
    /// an offer period; it happened when that transaction was bought), a price increase announced
    /// or accepted.
    static func periodEvents(
        _ row: SubscriptionRow, period: SubscriptionPeriod?, previous: SubscriptionPeriod?,
        add: (String, SubscriptionRow, [String], [String: String], Int64?) -> Void
    ) {
        guard let period else { return }
        if period.transactionId != previous?.transactionId, redeemedOffers.contains(period.periodType) {
            add("subscription.offer_redeemed", row, [period.transactionId, period.periodType],
                ["offerType": period.periodType, "transactionId": period.transactionId], period.purchaseDate)
        }
        if let status = period.priceIncrease, status != previous?.priceIncrease {
            // Keyed by the product and the transaction it is announced in: re-sent, it is no new event.
            add("subscription.price_increase", row, [status, row.productId, period.transactionId], ["status": status], nil)
        }
    }

    /// The event a subscription's status change is, if any. An expiry's reason is the renewal
    /// info's `expirationIntent` when a fact says it (2: a billing error), else what it left.
    static func statusEvent(from old: String?, to new: String, intent: Int? = nil) -> (name: String, details: [String: String])? {
        switch (old, new) {
        case (_, "gracePeriod"), (_, "billingRetry"): ("subscription.billing_issue", ["kind": new])
        case ("gracePeriod", "active"), ("billingRetry", "active"): ("subscription.recovered", [:])
        case ("refunded", "active"): ("subscription.refund_reversed", [:])
        case (_, "expired"):
            ("subscription.expired", ["reason": intent.map { $0 == 2 } ?? (old == "billingRetry") ? "billingError" : "unknown"])
        case (_, "refunded"): ("subscription.refunded", [:])
        case (_, "revoked"): ("subscription.revoked", [:])
        default: nil
        }
    }

    /// `evt_` and 32 hex digits of SHA-256 over the customer, the type and the change's key parts.
    static func eventID(appUserId: String, type: String, key: [String]) -> String {
        let text = ([appUserId, type] + key).joined(separator: "\u{1F}")
        return "evt_" + Hex.encode(SHA256.hash(Array(text.utf8))).prefix(32)
    }
}
