import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// `CONSUMPTION_REQUEST` with `consumption.autoRespond`: a durable job answers Apple (the fake) from
/// the ledger, with `customerConsented` only after the backend recorded consent.
@Suite(.serialized) struct ConsumptionScenarioTests {
    /// `id` buys pro.monthly, then asks Apple for a refund; the purchase's transaction id.
    func refundRequest(_ world: ReconcileWorld, _ id: String, consent: Bool?) async throws -> String {
        let token = try await world.tokenOf(id)
        try await world.act("customer") { $0.customer = id }
        try await world.act("purchase") {
            $0.customer = id
            $0.product = "pro.monthly"
            $0.appAccountToken = token
        }
        if let consent {
            let reply = try await Loopback.send(
                port: world.port, "PUT", "/v1/customers/\(id)/consent",
                headers: ["Authorization": APIHarness.writer, "Content-Type": "application/json"],
                body: Array(#"{"consented":\#(consent)}"#.utf8))
            #expect(reply.status == 200, "\(reply.text)")
        }
        _ = try await world.simulator.advance(by: ISODuration("P40D")!)
        try await world.act("consumptionRequest") {
            $0.customer = id
            $0.product = "pro.monthly"
        }
        let snapshot = await world.simulator.snapshot()
        return try #require(snapshot.transactions.last { $0.appAccountToken == token }?.transactionId)
    }

    @Test func aConsentedCustomersRequestIsAnsweredFromTheLedger() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            _ = try await world.jobRunner.runDue()  // the backfill of the first purchase
            let transactionId = try await refundRequest(world, "alice", consent: true)
            let report = try await world.jobRunner.runDue()
            #expect(report.done >= 1 && report.failed == 0 && report.retried == 0)
            let sent = try #require(await world.simulator.consumptionInformation.values.first)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(sent)) as? [String: Any])
            #expect(body["customerConsented"] as? Bool == true)
            #expect(body["deliveryStatus"] as? Int == 0)
            #expect(body["accountTenure"] as? Int == 4, "40 days a customer: 30–90 days")
            #expect(body["lifetimeDollarsPurchased"] as? Int == 2, "two months of 9.99 USD: 0.01–49.99")
            #expect(body["lifetimeDollarsRefunded"] as? Int == 1, "nothing refunded")
            #expect(await world.simulator.consumptionInformation.count == 1)
            #expect(body["appAccountToken"] as? String == (try await world.tokenOf("alice")))
            _ = transactionId
        }
    }

    @Test(arguments: [false, nil] as [Bool?])
    func withoutConsentNothingIsSent(consent: Bool?) async throws {
        try await ReconcileScenarioTests.withWorld { world in
            _ = try await refundRequest(world, "bob", consent: consent)
            let report = try await world.jobRunner.runDue()
            #expect(report.failed == 0 && report.retried == 0)
            #expect(await world.simulator.consumptionInformation.isEmpty)
        }
    }
}
