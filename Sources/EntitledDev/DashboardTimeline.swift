import EntitledServer
import Foundation

extension Dashboard {
    /// One row of a customer's dashboard timeline: a notification once (the ledger lists both the
    /// notification and the fact it became), with what arrived in it and how the simulator's post
    /// of it went; or a fact that arrived alone (a transaction the app posted).
    struct TimelineEntry: Encodable {
        /// The ledger's entry; nil for a notification the server never stored (its delivery failed).
        var item: HistoryItemBody?
        /// What the notification carried, stored with it: its transaction, its renewal info.
        var carried: [HistoryItemBody]
        /// The simulator's post of this notification (first page only).
        var delivery: Delivery?
    }

    /// The ledger's entries (newest first, as the history pages them) and the simulator's
    /// deliveries (newest first) as timeline rows, newest first, each notification once and
    /// before what it carried (cause, then effects). Entries stored at the same instant arrived
    /// together: a notification and its facts. A delivery the ledger has no notification for gets
    /// a row of its own, placed by its signed date.
    static func timelineEntries(_ items: [LedgerHistoryEntry], deliveries: [(signedAt: Int64, delivery: Delivery)]) -> [TimelineEntry] {
        var arrivals: [[LedgerHistoryEntry]] = []
        for item in items {
            if let last = arrivals.last?.last, last.receivedAt == item.receivedAt {
                arrivals[arrivals.count - 1].append(item)
            } else {
                arrivals.append([item])
            }
        }
        var unmatched = deliveries
        var entries: [(at: Int64, entry: TimelineEntry)] = []
        for arrival in arrivals {
            var heads: [LedgerHistoryEntry] = []
            var facts: [LedgerHistoryEntry] = []
            for item in arrival {
                guard item.kind == .notification || item.kind == .v1Notification else {
                    facts.append(item)
                    continue
                }
                // The notification's row and the fact it became: one notification, with the
                // transaction id the fact knows.
                if let same = heads.firstIndex(where: { sameNotification($0, item) }) {
                    heads[same].transactionId = heads[same].transactionId ?? item.transactionId
                    heads[same].originalTransactionId = heads[same].originalTransactionId ?? item.originalTransactionId
                } else {
                    heads.append(item)
                }
            }
            guard !heads.isEmpty else {
                entries += facts.map { (at: $0.occurredAt, entry: TimelineEntry(item: HistoryItemBody($0), carried: [], delivery: nil)) }
                continue
            }
            // Newest first: the ledger's later ids first, so its earliest notification ends up last.
            heads.sort { $0.occurredAt > $1.occurredAt }
            // A fact goes with the notification of its transaction, else of its subscription, else the first.
            func owner(_ fact: LedgerHistoryEntry) -> Int {
                heads.firstIndex { $0.transactionId != nil && $0.transactionId == fact.transactionId }
                    ?? heads.firstIndex { $0.originalTransactionId != nil && $0.originalTransactionId == fact.originalTransactionId } ?? 0
            }
            for (index, head) in heads.enumerated() {
                let carried = facts.filter { owner($0) == index }
                let delivery = unmatched.firstIndex { matches($0, head) }.map { unmatched.remove(at: $0).delivery }
                entries.append(
                    (at: head.occurredAt,
                     entry: TimelineEntry(item: HistoryItemBody(head), carried: carried.map(HistoryItemBody.init), delivery: delivery)))
            }
        }
        // Posts that never became a stored notification, among the rest by their signed date.
        for (at, delivery) in unmatched {
            let index = entries.firstIndex { $0.at < at } ?? entries.count
            entries.insert((at: at, entry: TimelineEntry(item: nil, carried: [], delivery: delivery)), at: index)
        }
        return entries.map(\.entry)
    }

    private static func sameNotification(_ a: LedgerHistoryEntry, _ b: LedgerHistoryEntry) -> Bool {
        a.type == b.type && a.subtype == b.subtype && a.occurredAt == b.occurredAt
    }

    private static func matches(_ delivery: (signedAt: Int64, delivery: Delivery), _ notification: LedgerHistoryEntry) -> Bool {
        delivery.delivery.notificationType == notification.type && delivery.delivery.subtype == notification.subtype
            && delivery.signedAt == notification.occurredAt
    }
}
