import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// The console's questions to Apple against the simulator's fake App Store Server API, on
/// `sqlite::memory:`: order-id search (console scope), the support actions (admin) and their
/// audit record, what `/v1/console/session` tells the page, and the typed refusal without
/// `serverAPI`.
@Suite(.serialized) struct ConsoleSupportTests {
    static let console = APIHarness.console

    func get(_ world: ReconcileWorld, _ path: String, auth: String? = APIHarness.admin) async throws -> Loopback.Reply {
        try await send(world, "GET", path, auth: auth)
    }

    func send(_ world: ReconcileWorld, _ method: String, _ path: String, json: String? = nil, auth: String? = APIHarness.admin)
        async throws -> Loopback.Reply
    {
        var headers: [String: String] = [:]
        if let auth { headers["Authorization"] = auth }
        if json != nil { headers["Content-Type"] = "application/json" }
        let reply = try await Loopback.send(port: world.port, method, path, headers: headers, body: Array((json ?? "").utf8))
        ProblemTable.check(reply)
        return reply
    }

    func withWorld(_ body: (ReconcileWorld) async throws -> Void) async throws {
        try await ReconcileScenarioTests.withWorld(storeURL: "sqlite::memory:", body)
    }

    /// `who` buys pro.monthly (delivered to the server unless `delivered` is false); the transaction.
    func purchase(_ world: ReconcileWorld, _ who: String, delivered: Bool = true) async throws -> JWSTransactionDecodedPayload {
        let token = try await world.tokenOf(who)
        try await world.act("customer") { $0.customer = who }
        if !delivered { await world.transport.set(down: true) }
        try await world.act("purchase") {
            $0.customer = who
            $0.product = "pro.monthly"
            $0.appAccountToken = token
        }
        await world.transport.set(down: false)
        return try #require(await world.simulator.snapshot().transactions.last)
    }

    func supportActions(_ world: ReconcileWorld, _ who: String) async throws -> [[String: Any]] {
        let timeline = try await get(world, "/v1/console/customers/\(who)/timeline", auth: Self.console)
        return try #require(timeline.json["supportActions"] as? [[String: Any]], "\(timeline.text)")
    }

    @Test func anOrderIdFindsItsCustomerAndIsRecorded() async throws {
        try await withWorld { world in
            let bought = try await purchase(world, "alice")
            let orderId = Simulator.orderId(ofTransaction: try #require(bought.transactionId))
            let found = try await get(world, "/v1/console/customers?orderId=\(orderId)", auth: Self.console)
            #expect(found.status == 200, "\(found.text)")
            #expect((found.json["customers"] as? [[String: Any]])?.map { $0["appUserId"] as? String } == ["alice"])
            let order = try #require(found.json["order"] as? [String: Any])
            #expect(order["status"] as? String == "valid")
            let transactions = try #require(order["transactions"] as? [[String: Any]])
            #expect(transactions.map { $0["transactionId"] as? String } == [bought.transactionId])
            #expect(transactions.first?["appUserId"] as? String == "alice")
            #expect(transactions.first?["learned"] as? Bool == false, "the ledger had it from the notification")

            let actions = try await supportActions(world, "alice")
            #expect(actions.map { $0["action"] as? String } == ["order_lookup"])
            #expect(actions.first?["subject"] as? String == orderId && actions.first?["actor"] as? String == "console")
            #expect((actions.first?["detail"] as? [String: String])?["outcome"] == "OK")

            // The admin endpoint's lookup is recorded too, under the admin key.
            #expect(try await get(world, "/v1/apple/orders/\(orderId)").status == 200)
            let both = try await supportActions(world, "alice")
            #expect(both.map { "\($0["action"] ?? "") \($0["actor"] ?? "")" } == ["order_lookup admin", "order_lookup console"])

            let unknown = try await get(world, "/v1/console/customers?orderId=NOSUCHORDER", auth: Self.console)
            #expect(unknown.status == 200 && (unknown.json["order"] as? [String: Any])?["status"] as? String == "invalid")
            #expect((unknown.json["customers"] as? [Any])?.isEmpty == true)
        }
    }

    /// A purchase whose notification never arrived: the lookup's verified transaction is ingested
    /// once, and its appAccountToken links it to the customer.
    @Test func anOrderTheLedgerMissedIsLearnedOnce() async throws {
        try await withWorld { world in
            let bought = try await purchase(world, "bob", delivered: false)
            let orderId = Simulator.orderId(ofTransaction: try #require(bought.transactionId))
            #expect((try await world.answer("bob")["entitlements"] as? [String: Any])?["pro"] == nil, "nothing arrived")

            let first = try await get(world, "/v1/console/customers?orderId=\(orderId)", auth: Self.console)
            let learned = (first.json["order"] as? [String: Any])?["transactions"] as? [[String: Any]]
            #expect(learned?.map { $0["learned"] as? Bool } == [true], "\(first.text)")
            #expect(learned?.first?["appUserId"] as? String == "bob")
            #expect((try await world.answer("bob")["entitlements"] as? [String: Any])?["pro"] != nil)

            let again = try await get(world, "/v1/console/customers?orderId=\(orderId)", auth: Self.console)
            let known = (again.json["order"] as? [String: Any])?["transactions"] as? [[String: Any]]
            #expect(known?.map { $0["learned"] as? Bool } == [false], "stored once, not once per search")
        }
    }

    @Test(arguments: [
        ("/v1/console/customers?orderId=not%20an%20id", ConsoleSupportTests.console, 400, "INVALID_REQUEST"),
        ("/v1/console/customers?orderId=\(String(repeating: "A", count: 65))", ConsoleSupportTests.console, 400, "INVALID_REQUEST"),
        ("/v1/console/customers?orderId=ABC&q=alice", ConsoleSupportTests.console, 400, "INVALID_REQUEST"),
        ("/v1/console/customers?orderId=ABC&bundleId=com.nope", ConsoleSupportTests.console, 404, "APP_NOT_FOUND"),
        ("/v1/console/customers?orderId=ABC", APIHarness.reader, 403, "FORBIDDEN"),
        ("/v1/console/customers?orderId=ABC", nil, 401, "UNAUTHORIZED"),
        ("/v1/apple/orders/not-an-id", APIHarness.admin, 400, "INVALID_REQUEST"),
        ("/v1/apple/orders/ABC", ConsoleSupportTests.console, 403, "FORBIDDEN"),
    ] as [(String, String?, Int, String)])
    func orderSearchRefusals(_ path: String, _ auth: String?, _ status: Int, _ code: String) async throws {
        try await withWorld { world in
            let reply = try await get(world, path, auth: auth)
            #expect(reply.status == status && reply.code == code, "\(reply.text)")
        }
    }

    /// Extend and refund lookup are admin actions; each attempt an admin key makes is recorded
    /// with its outcome, a console key's is refused before anything happens.
    @Test func supportActionsAreAdminOnlyAndAudited() async throws {
        try await withWorld { world in
            let bought = try await purchase(world, "carol")
            let otid = try #require(bought.originalTransactionId)
            let extend = "/v1/subscriptions/\(otid)/extend"
            let refused = try await send(world, "POST", extend, json: #"{"days":5,"reason":1,"requestIdentifier":"r-0"}"#, auth: Self.console)
            #expect(refused.status == 403)
            #expect(try await get(world, "/v1/subscriptions/\(otid)/refunds", auth: Self.console).status == 403)
            #expect(try await supportActions(world, "carol").isEmpty, "a refused key leaves no action")

            let extended = try await send(world, "POST", extend, json: #"{"days":5,"reason":1,"requestIdentifier":"r-1"}"#)
            #expect(extended.status == 200, "\(extended.text)")
            let bad = try await send(world, "POST", extend, json: #"{"days":91,"reason":1,"requestIdentifier":"r-2"}"#)
            #expect(bad.status == 400 && bad.code == "INVALID_REQUEST")
            for path in ["/v1/subscriptions/not-an-id/refunds", "/v1/subscriptions/\(String(repeating: "1", count: 65))/refunds"] {
                let refused = try await get(world, path)
                #expect(refused.status == 400 && refused.code == "INVALID_REQUEST", "\(path): \(refused.text)")
            }
            let malformed = try await send(world, "POST", "/v1/subscriptions/o%2F1/extend", json: #"{"days":5,"reason":1,"requestIdentifier":"r-3"}"#)
            #expect(malformed.status == 400 && malformed.code == "INVALID_REQUEST")
            let refunds = try await get(world, "/v1/subscriptions/\(otid)/refunds")
            #expect(refunds.status == 200 && (refunds.json["refunds"] as? [Any])?.isEmpty == true)

            let actions = try await supportActions(world, "carol")
            #expect(actions.map { $0["action"] as? String } == ["refund_lookup", "extend", "extend"])
            let details = actions.map { $0["detail"] as? [String: String] ?? [:] }
            #expect(details.map { $0["outcome"] } == ["OK", "INVALID_REQUEST", "OK"])
            #expect(details[2]["days"] == "5" && details[2]["requestIdentifier"] == "r-1" && details[2]["effectiveDate"] != nil)
            #expect(actions.allSatisfy { $0["actor"] as? String == "admin" && $0["subject"] as? String == otid })
        }
    }

    @Test(arguments: [
        (ConsoleSupportTests.console, 200, false), (APIHarness.admin, 200, true), (APIHarness.reader, 403, false),
    ] as [(String, Int, Bool)])
    func theSessionSaysWhatThePageMayOffer(_ auth: String, _ status: Int, _ admin: Bool) async throws {
        try await withWorld { world in
            let reply = try await get(world, "/v1/console/session", auth: auth)
            #expect(reply.status == status)
            if status == 200 {
                #expect(reply.json["admin"] as? Bool == admin)
                #expect(reply.json["serverAPIApps"] as? [String] == [world.reconciler.bundleId])
                // What the grant form offers: each configured entitlement once, sorted.
                #expect(reply.json["entitlements"] as? [String] == ["basic", "pro"])
            }
        }
    }

    /// Without `serverAPI` the API says so, for the search and each action, and still records
    /// the attempt of an admin action.
    @Test(arguments: [
        ("GET", "/v1/console/customers?orderId=ABC123", ConsoleSupportTests.console),
        ("GET", "/v1/subscriptions/1000/refunds", APIHarness.admin),
        ("POST", "/v1/subscriptions/1000/extend", APIHarness.admin),
    ])
    func withoutServerAPITheAPISaysSo(_ method: String, _ path: String, _ auth: String) async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            let reply = try await api.send(
                method, path, auth: auth, json: method == "POST" ? #"{"days":5,"reason":1,"requestIdentifier":"r"}"# : nil)
            #expect(reply.status == 409 && reply.code == "SERVER_API_NOT_CONFIGURED", "\(reply.text)")
            let session = try await api.send("GET", "/v1/console/session", auth: auth)
            #expect(session.json["serverAPIApps"] as? [String] == [])
        }
    }
}
