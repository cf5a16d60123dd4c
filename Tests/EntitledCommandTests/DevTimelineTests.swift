@testable import EntitledDev
import EntitledServer
import Testing

/// The dev dashboard's timeline rows: the ledger lists a notification twice (the notification and
/// the fact it became) and what it carried beside it; the rows show it once, with its delivery,
/// what it carried under it, and a post the server never stored in its place.
@Suite struct DevTimelineTests {
    static func delivery(_ uuid: String, _ type: String, at: Int64, delivered: Bool = true) -> (signedAt: Int64, delivery: Dashboard.Delivery) {
        (signedAt: at,
         delivery: Dashboard.Delivery(
            notificationUUID: uuid, notificationType: type, subtype: nil, signedDate: "\(at)", delivered: delivered, attempts: 1,
            lastStatus: delivered ? 200 : 500, lastError: nil))
    }

    @Test func eachNotificationOnceWithWhatItCarriedAndItsDelivery() {
        // Newest first, as the history pages them: a renewal (day 30) and the purchase (day 0).
        let items = [
            LedgerHistoryEntry(id: "fact-6", kind: .renewalInfo, occurredAt: 30, receivedAt: 30, originalTransactionId: "1"),
            LedgerHistoryEntry(id: "fact-5", kind: .transaction, type: "RENEWAL", occurredAt: 30, receivedAt: 30, transactionId: "2", originalTransactionId: "1"),
            LedgerHistoryEntry(id: "fact-4", kind: .notification, type: "DID_RENEW", occurredAt: 30, receivedAt: 30, transactionId: "2"),
            LedgerHistoryEntry(id: "notification-2", kind: .notification, type: "DID_RENEW", occurredAt: 30, receivedAt: 30),
            LedgerHistoryEntry(id: "fact-3", kind: .transaction, type: "PURCHASE", occurredAt: 0, receivedAt: 0, transactionId: "1", originalTransactionId: "1"),
            LedgerHistoryEntry(id: "fact-2", kind: .notification, type: "SUBSCRIBED", occurredAt: 0, receivedAt: 0, transactionId: "1"),
            LedgerHistoryEntry(id: "notification-1", kind: .notification, type: "SUBSCRIBED", occurredAt: 0, receivedAt: 0),
        ]
        // The simulator's posts, newest first: one on day 20 that the server refused.
        let deliveries = [Self.delivery("c", "DID_RENEW", at: 30), Self.delivery("b", "DID_CHANGE_RENEWAL_PREF", at: 20, delivered: false),
                          Self.delivery("a", "SUBSCRIBED", at: 0)]
        let rows = Dashboard.timelineEntries(items, deliveries: deliveries)
        #expect(rows.map { $0.item?.entry.type } == ["DID_RENEW", nil, "SUBSCRIBED"])
        #expect(rows.map { $0.delivery?.notificationUUID } == ["c", "b", "a"])
        #expect(rows[0].item?.entry.transactionId == "2")
        #expect(rows[0].carried.map(\.entry.id) == ["fact-6", "fact-5"])
        #expect(rows[2].carried.map(\.entry.id) == ["fact-3"])
        #expect(rows[1].delivery?.delivered == false && rows[1].carried.isEmpty)
    }

    @Test func aFactThatArrivedAloneIsARowOfItsOwn() {
        let items = [
            LedgerHistoryEntry(id: "fact-9", kind: .transaction, type: "PURCHASE", occurredAt: 50, receivedAt: 55, transactionId: "7"),
            LedgerHistoryEntry(id: "fact-8", kind: .appTransaction, occurredAt: 40, receivedAt: 55),
        ]
        let rows = Dashboard.timelineEntries(items, deliveries: [])
        #expect(rows.map { $0.item?.entry.id } == ["fact-9", "fact-8"])
        #expect(rows.allSatisfy { $0.carried.isEmpty && $0.delivery == nil })
    }
}
