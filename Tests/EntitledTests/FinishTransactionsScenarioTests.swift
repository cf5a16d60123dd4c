import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPClient
import Synchronization
import Testing

/// Answers the first `failures` Finish Transaction calls 503 (Apple down), passing the rest on.
final class FailingFinish: OutboundHTTP {
    let base: any OutboundHTTP
    let remaining: Mutex<Int>

    init(_ base: any OutboundHTTP, failures: Int) {
        self.base = base
        remaining = Mutex(failures)
    }

    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        let fail = request.url.path.hasSuffix("/finish") && remaining.withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
        if fail { return OutboundResponse(status: 503, body: Array(#"{"errorCode":5000000,"errorMessage":"down"}"#.utf8)) }
        return try await base.send(request)
    }
}

/// `apps[].finishTransactions`: each stored transaction is finished at Apple (the fake) by a
/// durable job, once, whether it came by notification, by post or both.
@Suite(.serialized) struct FinishTransactionsScenarioTests {
    @Test func aNotifiedAndPostedTransactionIsFinishedOnceAfterARetry() async throws {
        // More failures than one run's client retries: the first run of the job fails.
        let failures = RetryPolicy().maxAttempts
        try await ReconcileScenarioTests.withWorld(
            outbound: { FailingFinish($0, failures: failures) }, configureApp: { $0.finishTransactions = true }
        ) { world in
            try await world.subscribeMonthly("alice")
            let transactionId = try #require(await world.simulator.store.transactionOrder.last)
            let first = try await world.jobRunner.runDue()
            #expect(first.retried == 1 && first.failed == 0, "the finish job failed and waits for its retry: \(first)")
            #expect(await world.simulator.finishedTransactions.isEmpty)

            // The app posts the same transaction: no second job.
            let signed = try #require(try await world.simulator.signedTransaction(transactionId))
            let posted = try await Loopback.send(
                port: world.port, "POST", "/v1/customers/alice/transactions",
                headers: ["Authorization": APIHarness.writer, "Content-Type": "application/json"],
                body: Array(#"{"signedTransaction":"\#(signed)"}"#.utf8))
            #expect(posted.status == 200, "\(posted.text)")

            _ = try await world.simulator.advance(by: ISODuration("PT10M")!)  // past the job's backoff
            let second = try await world.jobRunner.runDue()
            #expect(second.done == 1 && second.retried == 0 && second.failed == 0, "\(second)")
            #expect(await world.simulator.finishedTransactions == [transactionId])

            _ = try await world.simulator.advance(by: ISODuration("PT10M")!)
            #expect(try await world.jobRunner.runDue() == JobRunReport())
            #expect(await world.simulator.finishedTransactions == [transactionId])
        }
    }

    @Test func withoutTheOptionNothingIsFinished() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            try await world.act("customer") { $0.customer = "bob" }
            try await world.act("purchase") {
                $0.customer = "bob"
                $0.product = "pro.monthly"
            }
            _ = try await world.jobRunner.runDue()
            #expect(await world.simulator.finishedTransactions.isEmpty)
        }
    }
}
