import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Storage
import Testing

/// Backfill on first sight: a subscription the ledger first meets through a renewal gets its whole
/// history from the (fake) App Store Server API, through a durable job.
@Suite(.serialized) struct BackfillScenarioTests {
    func jobs(_ world: ReconcileWorld, _ query: String = "") async throws -> [[String: Any]] {
        let reply = try await Loopback.send(
            port: world.port, "GET", "/v1/jobs\(query)", headers: ["Authorization": APIHarness.admin])
        #expect(reply.status == 200)
        return reply.json["jobs"] as? [[String: Any]] ?? []
    }

    /// The transaction ids the ledger holds for `otid`.
    func storedTransactionIds(_ world: ReconcileWorld, customer: String, otid: String) async throws -> Set<String> {
        Set(
            try await world.store.facts(appUserId: customer).compactMap { stored -> String? in
                guard case .transaction(let fact) = stored.fact, fact.originalTransactionId == otid else { return nil }
                return fact.transactionId
            })
    }

    /// dave buys while the server is down for longer than Apple retries; the first thing the server
    /// hears of his subscription is its renewal.
    func firstSightIsARenewal(_ world: ReconcileWorld) async throws -> String {
        let token = try await world.tokenOf("dave")
        await world.transport.set(down: true)
        try await world.act("customer") { $0.customer = "dave" }
        try await world.act("purchase") {
            $0.customer = "dave"
            $0.product = "pro.monthly"
            $0.appAccountToken = token
        }
        _ = try await world.simulator.advance(by: ISODuration("P8D")!)
        await world.transport.set(down: false)
        _ = try await world.simulator.advance(by: ISODuration("P24D")!)  // the renewal is delivered
        let snapshot = await world.simulator.snapshot()
        return try #require(snapshot.subscriptions.first?.originalTransactionId)
    }

    @Test func aCustomerFirstSeenAtARenewalEndsWithItsFullHistory() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let otid = try await firstSightIsARenewal(world)
            let apple = Set(await world.simulator.snapshot().transactions.filter { $0.originalTransactionId == otid }.compactMap(\.transactionId))
            #expect(apple.count == 2, "Apple knows the purchase and the renewal")
            let before = try await storedTransactionIds(world, customer: "dave", otid: otid)
            #expect(before.count == 1 && before.isSubset(of: apple), "only the renewal reached the server")
            let pending = try await jobs(world, "?status=pending")
            #expect(pending.count == 1 && pending.first?["kind"] as? String == "backfill" && pending.first?["subject"] as? String == otid)
            #expect(pending.first?["runAt"] as? String == "2027-02-15T08:00:00.000Z", "due when the renewal arrived")
            #expect(pending.first?["lastError"] is NSNull)

            let report = try await world.jobRunner.runDue()
            #expect(report.done == 1 && report.retried == 0 && report.failed == 0)
            #expect(try await storedTransactionIds(world, customer: "dave", otid: otid) == apple)
            #expect(try await jobs(world, "?status=done").count == 1)

            // The next renewal is no first sight: no second job.
            _ = try await world.simulator.advance(by: ISODuration("P1M")!)
            #expect(try await jobs(world).count == 1)
            #expect(try await world.jobRunner.runDue() == JobRunReport())
        }
    }

    @Test func aFailedBackfillIsRetriedAfterABackoff() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let otid = try await firstSightIsARenewal(world)
            await world.simulator.throttleServerAPI(requests: 50)
            let failed = try await world.jobRunner.runDue()
            #expect(failed.retried == 1 && failed.done == 0)
            let pending = try #require(try await jobs(world, "?status=pending").first)
            #expect(pending["attempts"] as? Int == 1)
            #expect((pending["lastError"] as? String)?.hasPrefix("APPLE_RATE_LIMITED") == true)
            await world.simulator.throttleServerAPI(requests: 0)
            // Not due before the backoff has passed.
            #expect(try await world.jobRunner.runDue() == JobRunReport())
            _ = try await world.simulator.advance(by: ISODuration("PT1M")!)
            #expect(try await world.jobRunner.runDue().done == 1)
            #expect(try await storedTransactionIds(world, customer: "dave", otid: otid).count == 2)
        }
    }

    @Test(arguments: [(1, 30_000), (2, 60_000), (5, 480_000), (10, 15_360_000), (11, 6 * 3_600_000), (40, 6 * 3_600_000)] as [(Int, Int64)])
    func backoffDoublesUpToSixHours(attempt: Int, wait: Int64) {
        #expect(JobRunner.backoffMilliseconds(afterAttempt: attempt) == wait)
    }
}
