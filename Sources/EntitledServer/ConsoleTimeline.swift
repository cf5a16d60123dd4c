import Entitlements
import Foundation
import HTTPServer
import Storage

/// A customer's history in words: one event per message the ledger received (a notification with
/// the transaction and renewal info it carried is one event, not three rows), each with the facts
/// it stored, for the console's timeline.
enum ConsoleTimeline {
    struct Event: Encodable, Equatable {
        /// When it happened (Apple's date: the notification's or the transaction's `signedDate`).
        var at: String
        var receivedAt: String
        var environment: String
        /// The notification type (and subtype), or the fact kind of a message without one.
        var kind: String
        /// What happened, in words.
        var text: String
        var notificationId: Int64?
        /// The stored facts of the event (the engine's JSON), for the raw view.
        var raw: [String]
    }

    /// Events oldest first.
    static func events(_ facts: [StoredFact], encode: (Fact) -> String = { _ in "" }) -> [Event] {
        var groups: [[StoredFact]] = []
        var index: [Int64: Int] = [:]
        for fact in facts {
            if let id = fact.notificationID, let at = index[id] {
                groups[at].append(fact)
            } else {
                if let id = fact.notificationID { index[id] = groups.count }
                groups.append([fact])
            }
        }
        return groups.map { event($0, encode: encode) }.sorted { ($0.at, $0.receivedAt) < ($1.at, $1.receivedAt) }
    }

    static func event(_ group: [StoredFact], encode: (Fact) -> String) -> Event {
        let decoded = group.compactMap(\.fact)
        var notification: NotificationFact?
        var transaction: TransactionFact?
        var renewal: RenewalInfoFact?
        var other: Fact?
        for fact in decoded {
            switch fact {
            case .notification(let n): notification = n
            case .transaction(let t): transaction = t
            case .renewalInfo(let r): renewal = r
            default: other = other ?? fact
            }
        }
        let date = notification?.signedDate ?? transaction?.signedDate ?? renewal?.signedDate ?? other?.date ?? group[0].receivedAt
        let environment = decoded.first?.environment.rawValue ?? ""
        let kind = notification.map { [$0.type.rawValue, $0.subtype?.rawValue].compactMap { $0 }.joined(separator: " ") }
            ?? group[0].kind
        return Event(
            at: ISO8601.format(milliseconds: date), receivedAt: ISO8601.format(milliseconds: group[0].receivedAt),
            environment: environment, kind: kind,
            text: words(notification: notification, transaction: transaction, renewal: renewal, other: other),
            notificationId: group[0].notificationID, raw: decoded.map(encode))
    }

    /// One sentence for an event.
    static func words(
        notification: NotificationFact?, transaction t: TransactionFact?, renewal: RenewalInfoFact?, other: Fact?
    ) -> String {
        let product = t?.productId ?? notification?.productId ?? renewal?.productId ?? "a product"
        let priced = product + (t.flatMap(price).map { ", \($0)" } ?? "")
        guard let n = notification else {
            if let t { return (t.revocationDate != nil ? "Refunded " : "Purchase recorded: ") + priced }
            if let renewal { return "Renewal info for \(renewal.productId): auto-renew \(renewal.autoRenewStatus ? "on" : "off")" }
            if case .consumableSpend(let spend) = other { return "Spent \(spend.quantity) × \(spend.productId)" }
            if let other { return "Recorded \(other.ledgerKind)" }
            return "Received a message the server could not read"
        }
        let subtype = n.subtype?.rawValue
        switch n.type {
        case .subscribed:
            return (subtype == "RESUBSCRIBE" ? "Resubscribed to " : "Subscribed to ") + priced
                + (t?.offerDiscountType == .freeTrial ? " (free trial)" : "")
        case .didRenew:
            return (subtype == "BILLING_RECOVERY" ? "Recovered billing and renewed " : "Renewed ") + priced
        case .didFailToRenew:
            if subtype == "GRACE_PERIOD", let until = renewal?.gracePeriodExpiresDate {
                return "Renewal of \(product) failed: entered billing grace period until \(ISO8601.format(milliseconds: until))"
            }
            return "Renewal of \(product) failed: entered billing retry"
        case .expired: return "Expired \(product)" + (subtype.map { " (\(phrase($0)))" } ?? "")
        case .gracePeriodExpired: return "Billing grace period of \(product) ended"
        case .didChangeRenewalStatus:
            return subtype == "AUTO_RENEW_DISABLED" ? "Turned auto-renew off for \(product)" : "Turned auto-renew on for \(product)"
        case .didChangeRenewalPref:
            let to = renewal?.autoRenewProductId ?? product
            return subtype == "UPGRADE" ? "Upgraded to \(to)" : subtype == "DOWNGRADE" ? "Will downgrade to \(to) at renewal"
                : "Will renew as \(to)"
        case .refund: return "Refunded " + priced
        case .refundReversed: return "Refund reversed for " + priced
        case .refundDeclined: return "Refund request declined for \(product)"
        case .revoke: return "Family Sharing access to \(product) revoked"
        case .offerRedeemed: return "Redeemed an offer for \(priced)"
        case .priceIncrease: return "Price increase for \(product)" + (subtype == "ACCEPTED" ? " accepted" : " pending consent")
        case .renewalExtended: return "Renewal date of \(product) extended"
        case .consumptionRequest: return "Apple asked for consumption information on \(product)"
        case .test: return "Test notification"
        default: return phrase(n.type.rawValue) + (subtype.map { " (\(phrase($0)))" } ?? "") + " — \(product)"
        }
    }

    /// `AUTO_RENEW_DISABLED` → "auto renew disabled".
    static func phrase(_ token: String) -> String { token.lowercased().replacingOccurrences(of: "_", with: " ") }

    /// "$9.99", "€4.99", "9.99 CHF" from Apple's milli-units.
    static func price(_ t: TransactionFact) -> String? {
        guard let milli = t.price, let currency = t.currency else { return nil }
        let symbols = ["USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"]
        let units = milli / 1000, cents = abs(milli % 1000) / 10
        let amount = "\(units).\(cents < 10 ? "0" : "")\(cents)"
        return symbols[currency].map { $0 + amount } ?? "\(amount) \(currency)"
    }
}
