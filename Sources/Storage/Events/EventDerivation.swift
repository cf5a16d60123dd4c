import EntitledCrypto
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
    /// The earliest signed date of the message's facts: the customer's history is re-derived from there.
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

/// Derives events from a customer's projection before and after a committed change.
///
/// Events describe changes of the answer, not Apple's notification types, so a duplicate or a
/// replay (no change) gives none, and an event's id depends on the customer and the change (the
/// subscription, the new status, expiry or product), so the same change reached again — another
/// delivery order, a re-ingest — is the same event and the outbox keeps it once.
enum EventDerivation {
    /// - Parameter periods: each subscription's current period before and after (what the rows do
    ///   not hold): a renewal is a new transaction and an extension the same one lasting longer; an
    ///   offer shows as a new transaction's period type, a price increase as its status changing.
    static func events(
        appUserId: String, before: CustomerProjection?, after: CustomerProjection, cause: EventCause?,
        periods: (before: [String: SubscriptionPeriod], after: [String: SubscriptionPeriod]) = ([:], [:])
    ) -> [DerivedEvent] {
        var events: [DerivedEvent] = []
        let old = Dictionary((before?.subscriptions ?? []).map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        func entitlements(_ otid: String?) -> [String] {
            after.entitlements.filter { $0.originalTransactionId == otid && otid != nil }.map(\.entitlement).sorted()
        }
        func add(_ type: String, _ row: SubscriptionRow, key: [String], details: [String: String] = [:], at instant: Int64? = nil) {
            let ended = type == "subscription.expired" ? max(row.expiresAt ?? 0, row.graceUntil ?? 0) : instant ?? 0
            events.append(
                DerivedEvent(
                    id: eventID(appUserId: appUserId, type: type, key: [row.originalTransactionId] + key), type: type,
                    environment: row.environment, originalTransactionId: row.originalTransactionId, productId: row.productId,
                    entitlements: entitlements(row.originalTransactionId), details: details, occurredAt: ended > 0 ? ended : nil))
        }
        let expiry = { (row: SubscriptionRow) in String(row.expiresAt ?? 0) }
        for row in after.subscriptions {
            let period = periods.after[row.originalTransactionId]
            let previousPeriod = periods.before[row.originalTransactionId]
            defer { periodEvents(row, period: period, previous: previousPeriod) { add($0, $1, key: $2, details: $3, at: $4) } }
            guard let previous = old[row.originalTransactionId] else {
                add("subscription.started", row, key: [])
                if let type = statusEvent(from: nil, to: row.status) { add(type.name, row, key: [row.status, expiry(row)], details: type.details) }
                continue
            }
            if previous.productId != row.productId {
                // A change at renewal shows with the renewal's new period; an upgrade at once.
                let timing = (row.expiresAt ?? 0) > (previous.expiresAt ?? 0) && previous.status == row.status ? "atRenewal" : "immediate"
                add("subscription.product_changed", row, key: [previous.productId, row.productId, expiry(row)],
                    details: ["from": previous.productId, "to": row.productId, "timing": timing])
            } else if row.status == "active", previous.status == "active" || previous.status == "expired",
                (row.expiresAt ?? 0) > (previous.expiresAt ?? 0)
            {
                if let period, period.transactionId == previousPeriod?.transactionId {
                    // The same transaction lasting longer: Apple extended the renewal date.
                    add("subscription.extended", row, key: [period.transactionId, expiry(row)],
                        details: ["from": String(previous.expiresAt ?? 0), "to": expiry(row)])
                } else {
                    add("subscription.renewed", row, key: [expiry(row)])
                }
            }
            if previous.status != row.status, let type = statusEvent(from: previous.status, to: row.status) {
                add(type.name, row, key: [row.status, expiry(row)], details: type.details)
            }
            if previous.autoRenew != row.autoRenew {
                add(row.autoRenew ? "subscription.auto_renew_enabled" : "subscription.auto_renew_disabled", row,
                    key: [String(row.autoRenew), cause.map { String($0.occurredAt) } ?? ""])
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
            case (let was, "refunded") where was != "refunded", (let was, "revoked") where was != "revoked": type = "purchase.refunded"
            default: continue
            }
            events.append(
                DerivedEvent(
                    id: eventID(appUserId: appUserId, type: type, key: [otid, row.status]), type: type, environment: row.environment,
                    originalTransactionId: otid, productId: row.productId, entitlements: entitlements(otid), details: [:]))
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

    /// The event a subscription's status change is, if any.
    static func statusEvent(from old: String?, to new: String) -> (name: String, details: [String: String])? {
        switch (old, new) {
        case (_, "gracePeriod"), (_, "billingRetry"): ("subscription.billing_issue", ["kind": new])
        case ("gracePeriod", "active"), ("billingRetry", "active"): ("subscription.recovered", [:])
        case ("refunded", "active"): ("subscription.refund_reversed", [:])
        case (_, "expired"): ("subscription.expired", ["reason": old == "billingRetry" ? "billingError" : "unknown"])
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
