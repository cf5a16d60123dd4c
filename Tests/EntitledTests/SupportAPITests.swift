import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// The support and operations endpoints (admin) against the simulator's fake App Store Server API
/// over loopback, and their typed refusal without `serverAPI`.
@Suite(.serialized) struct SupportAPITests {
    func send(_ world: ReconcileWorld, _ method: String, _ path: String, json: String? = nil, auth: String = APIHarness.admin)
        async throws -> Loopback.Reply
    {
        var headers = ["Authorization": auth]
        if json != nil { headers["Content-Type"] = "application/json" }
        let reply = try await Loopback.send(port: world.port, method, path, headers: headers, body: Array((json ?? "").utf8))
        ProblemTable.check(reply)
        return reply
    }

    /// alice buys pro.monthly; her first transaction.
    func alicesPurchase(_ world: ReconcileWorld) async throws -> JWSTransactionDecodedPayload {
        try await world.subscribeMonthly("alice")
        return try #require(await world.simulator.snapshot().transactions.first)
    }

    @Test func orderLookupFindsTheCustomerAndTheirAnswer() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let purchase = try await alicesPurchase(world)
            let orderId = Simulator.orderId(ofTransaction: try #require(purchase.transactionId))
            let reply = try await send(world, "GET", "/v1/apple/orders/\(orderId)")
            #expect(reply.status == 200, "\(reply.text)")
            let transactions = reply.json["transactions"] as? [[String: Any]] ?? []
            #expect(transactions.map { $0["transactionId"] as? String } == [purchase.transactionId])
            #expect(transactions.first?["appUserId"] as? String == "alice")
            let answer = (reply.json["customers"] as? [String: Any])?["alice"] as? [String: Any]
            #expect((answer?["entitlements"] as? [String: Any])?["pro"] != nil, "\(reply.text)")
            // Not a reader's question.
            #expect(try await send(world, "GET", "/v1/apple/orders/\(orderId)", auth: APIHarness.reader).status == 403)
        }
    }

    @Test func refundsExtensionsAndConsumption() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let purchase = try await alicesPurchase(world)
            let otid = try #require(purchase.originalTransactionId)
            let extended = try await send(
                world, "POST", "/v1/subscriptions/\(otid)/extend", json: #"{"days":10,"reason":1,"requestIdentifier":"r-1"}"#)
            #expect(extended.status == 200 && extended.json["originalTransactionId"] as? String == otid, "\(extended.text)")
            for bad in [#"{"days":0,"reason":1,"requestIdentifier":"r"}"#, #"{"days":91,"reason":1,"requestIdentifier":"r"}"#,
                        #"{"days":5,"reason":4,"requestIdentifier":"r"}"#, #"{"days":5,"reason":1,"requestIdentifier":""}"#] {
                let refused = try await send(world, "POST", "/v1/subscriptions/\(otid)/extend", json: bad)
                #expect(refused.status == 400 && refused.code == "INVALID_REQUEST", "\(bad)")
            }

            #expect((try await send(world, "GET", "/v1/subscriptions/\(otid)/refunds").json["refunds"] as? [Any])?.isEmpty == true)
            try await world.act("refund") {
                $0.customer = "alice"
                $0.product = "pro.monthly"
            }
            let refunds = try await send(world, "GET", "/v1/subscriptions/\(otid)/refunds").json["refunds"] as? [[String: Any]]
            #expect(refunds?.map { $0["transactionId"] as? String } == [purchase.transactionId])

            // Apple refuses to extend a refunded subscription: its code comes through.
            let inactive = try await send(
                world, "POST", "/v1/subscriptions/\(otid)/extend", json: #"{"days":10,"reason":1,"requestIdentifier":"r-2"}"#)
            #expect(inactive.status == 502 && inactive.code == "APPLE_API_FAILED" && inactive.text.contains("4030004"), "\(inactive.text)")

            let bundleId = world.reconciler.bundleId
            let mass = try await send(
                world, "POST", "/v1/apps/\(bundleId)/extend",
                json: #"{"days":3,"reason":3,"requestIdentifier":"mass-1","productId":"pro.monthly"}"#)
            #expect(mass.status == 202 && mass.json["requestIdentifier"] as? String == "mass-1", "\(mass.text)")
            let status = try await send(world, "GET", "/v1/apps/\(bundleId)/extend/pro.monthly/mass-1")
            #expect(status.status == 200 && status.json["complete"] as? Bool == true, "\(status.text)")
            let unknown = try await send(world, "GET", "/v1/apps/\(bundleId)/extend/pro.monthly/nope")
            #expect(unknown.status == 404 && unknown.code == "APPLE_NOT_FOUND")

            let consumption = try await send(
                world, "POST", "/v1/transactions/\(try #require(purchase.transactionId))/consumption",
                json: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)
            #expect(consumption.status == 202, "\(consumption.text)")
            let missing = try await send(world, "POST", "/v1/transactions/unknown-id/consumption",
                json: #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)
            #expect(missing.status == 404 && missing.code == "APPLE_NOT_FOUND", "\(missing.text)")
        }
    }

    @Test func testNotificationSaysWhetherItArrived() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let bundleId = world.reconciler.bundleId
            let arrived = try await send(world, "POST", "/v1/apps/\(bundleId)/test-notification")
            #expect(arrived.status == 200 && arrived.json["arrived"] as? Bool == true, "\(arrived.text)")
            #expect(arrived.json["arrivedAt"] as? String == ISO8601.format(milliseconds: world.simulator.now))
            await world.transport.set(down: true)
            let lost = try await send(world, "POST", "/v1/apps/\(bundleId)/test-notification")
            #expect(lost.status == 200 && lost.json["arrived"] as? Bool == false, "\(lost.text)")
            #expect((lost.json["attempts"] as? [[String: Any]])?.first?["result"] as? String != "SUCCESS")
            await world.transport.set(down: false)

            // Another server at the configured URL answers 200 without keeping anything: Apple
            // reports success, but nothing arrived here.
            var routes = Router()
            routes.post("/v1/apple/notifications") { _ in .text("ok") }
            var settings = HTTPServer.Configuration()
            settings.host = "127.0.0.1"
            settings.port = 0
            settings.accessLog = nil
            settings.errorLog = nil
            let elsewhere = HTTPServer(configuration: settings, router: routes)
            try elsewhere.start()
            await world.transport.point(at: URL(string: "http://127.0.0.1:\(elsewhere.port)/v1/apple/notifications")!)
            let misdirected = try await send(world, "POST", "/v1/apps/\(bundleId)/test-notification")
            await elsewhere.shutdown()
            #expect((misdirected.json["attempts"] as? [[String: Any]])?.first?["result"] as? String == "SUCCESS")
            #expect(misdirected.status == 200 && misdirected.json["arrived"] as? Bool == false, "\(misdirected.text)")
            #expect(misdirected.json["arrivedAt"] is NSNull)
        }
    }

    @Test(arguments: [
        ("GET", "/v1/apple/orders/ORDER1"), ("GET", "/v1/subscriptions/1000/refunds"),
        ("POST", "/v1/apps/com.example.app/test-notification"),
    ])
    func withoutServerAPIAnswers409(method: String, path: String) async throws {
        try await APIHarness.run { harness in
            let reply = try await harness.send(method, path, auth: APIHarness.admin)
            #expect(reply.status == 409 && reply.code == "SERVER_API_NOT_CONFIGURED", "\(reply.text)")
            let jobs = try await harness.send("GET", "/v1/jobs?status=pending", auth: APIHarness.admin)
            #expect(jobs.status == 200 && (jobs.json["jobs"] as? [Any])?.isEmpty == true)
        }
    }
}
