@testable import EntitledServer
@testable import EntitledTestSupport
import GooglePlaySimulator
import Foundation
@testable import Storage
import Testing

/// A Play purchase stored before the order index existed: after the upgrade's migration a pending
/// refund review of its order finds it and is answered from the ledger, on SQLite and PostgreSQL.
@Suite(.serialized) struct PlayEarlierOrderReviewTests {
    @Test(arguments: StoredBackend.all)
    func aReviewOfAnOrderStoredBeforeTheIndexIsAnswered(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await GooglePlayRefundReviewTests.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let token = try await served.postNewSubscription(world)
        _ = world.google.takeNotifications()
        // As an older server stored it: the purchase without its order row.
        let version = Schema.migrations.first { $0.name == "play orders of earlier purchases" }!.version
        try await executeSQL(served.store, "DELETE FROM play_orders")
        try await executeSQL(served.store, "DELETE FROM schema_migrations WHERE version = \(version)")
        let orderId = try #require(world.google.subscription(token)?.latestOrderId)
        #expect(try await served.store.playOrder(packageName: PlayWorld.packageName, orderId: orderId) == nil)

        #expect(try await served.store.migrate().applied == [version])
        _ = try world.google.requestRefundReview(token)
        let review = try #require(world.google.takeNotifications().first)
        #expect(try await GooglePlayRefundReviewTests.push(world, served, review, messageId: "r-1") == 200)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        #expect(world.google.reviewRefundCalls.count == 1)
        #expect(world.google.reviewRefundCalls.first?.orderId == orderId)
    }
}
