import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
@testable import Storage
import Testing

/// The whole server path on real storage: really signed notifications → verifier → engine →
/// ledger → projection → GET, on SQLite and PostgreSQL.
@Suite struct StoredAPITests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    struct Harness {
        let port: Int
        let store: any LedgerStore
        let clock: VirtualClock
        let configuration: Configuration

        func send(_ method: String, _ path: String, auth: String? = nil, json: String? = nil) async throws -> Loopback.Reply {
            var headers: [String: String] = [:]
            if let auth { headers["Authorization"] = auth }
            return try await Loopback.send(port: port, method, path, headers: headers, body: Array((json ?? "").utf8))
        }

        func postV2(_ payload: String) async throws -> Loopback.Reply {
            try await send("POST", "/v1/apple/notifications", json: #"{"signedPayload":"\#(payload)"}"#)
        }

        func customer(_ id: String) async throws -> Loopback.Reply {
            try await send("GET", "/v1/customers/\(id)", auth: APIHarness.reader)
        }
    }

    static func run(_ backend: StoredBackend, _ body: (Harness) async throws -> Void) async throws {
        let configuration = try SignedAPITests.configuration(trusting: TestSigning.ca)
        let clock = VirtualClock(APIHarness.start)
        let store = try await backend.open()
        let (server, ledger) = try await startServer(configuration: configuration, store: store, clock: clock)
        do {
            try await body(Harness(port: server.port, store: store, clock: clock, configuration: configuration))
        } catch {
            await server.shutdown()
            await store.close()
            throw error
        }
        // Whatever the test did, the projections equal what the ledger recomputes.
        let report = try await store.rebuild(projector: ledger.projector, now: clock.nowMilliseconds())
        #expect(report.differences == 0, "rebuild changed \(report.changedCustomers)")
        await server.shutdown()
        await store.close()
    }

    /// The lifecycle's notifications, really signed: buy, renew, turn auto-renew off.
    func steps(token: String) throws -> [String] {
        let d = Self.day
        func note(
            _ type: NotificationType, _ subtype: Entitlements.NotificationSubtype?, uuid: String, signed: Int64,
            tid: String, purchase: Int64, expires: Int64, autoRenew: Bool = true
        ) throws -> String {
            let signer = TestSigning.ca.signer
            let transaction = Apple.transaction(tid: tid, purchase: purchase, expires: expires, signed: signed, token: token)
            let renewal = Apple.renewal(autoRenew: autoRenew, signed: signed)
            let payload = ResponseBodyV2DecodedPayload(
                notificationType: type, subtype: subtype, notificationUUID: uuid,
                data: NotificationData(
                    environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                    signedTransactionInfo: try signer.sign(transaction), signedRenewalInfo: try signer.sign(renewal)),
                version: "2.0", signedDate: signed)
            return try signer.sign(payload)
        }
        return [
            try note(.subscribed, .initialBuy, uuid: "n1", signed: t0 - 40 * d, tid: "t1", purchase: t0 - 40 * d, expires: t0 - 10 * d),
            try note(.didRenew, nil, uuid: "n2", signed: t0 - 10 * d, tid: "t2", purchase: t0 - 10 * d, expires: t0 + 20 * d),
            try note(
                .didChangeRenewalStatus, .autoRenewDisabled, uuid: "n3", signed: t0 - 5 * d, tid: "t2", purchase: t0 - 10 * d,
                expires: t0 + 20 * d, autoRenew: false),
        ]
    }

    func comparable(_ reply: Loopback.Reply) -> NSDictionary {
        var json = reply.json
        json.removeValue(forKey: "appAccountToken")
        return json as NSDictionary
    }

    @Test(arguments: StoredBackend.all)
    func lifecycleInOrderThenShuffledGivesTheSameAnswer(backend: StoredBackend) async throws {
        var inOrder: NSDictionary?
        try await Self.run(backend) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let notes = try steps(token: token)
            #expect(try await api.postV2(notes[0]).status == 200)
            #expect(try await api.customer("u1").entitlement("pro")?["status"] as? String == "expired")
            #expect(try await api.postV2(notes[1]).status == 200)
            let renewed = try await api.customer("u1")
            #expect(renewed.entitlement("pro")?["status"] as? String == "active")
            #expect(renewed.entitlement("pro")?["willRenew"] as? Bool == true)
            #expect(try await api.postV2(notes[2]).status == 200)
            let cancelled = try await api.customer("u1")
            #expect(cancelled.entitlement("pro")?["willRenew"] as? Bool == false)
            #expect(cancelled.json["state"] as? String == "active")
            // Time passes with no notification: the subscription lapses by itself.
            api.clock.advance(by: 21 * Self.day)
            let lapsed = try await api.customer("u1")
            #expect(lapsed.entitlement("pro")?["status"] as? String == "expired")
            #expect(lapsed.json["state"] as? String == "inactive")
            api.clock.advance(by: -21 * Self.day)
            inOrder = comparable(try await api.customer("u1"))

            let history = try await api.send("GET", "/v1/customers/u1/history", auth: APIHarness.reader)
            #expect(history.status == 200)
            #expect((history.json["items"] as? [Any])?.isEmpty == false)
            let subscription = try await api.send("GET", "/v1/subscriptions/o1", auth: APIHarness.admin)
            #expect(subscription.status == 200)
            #expect(subscription.json["appUserId"] as? String == "u1")
        }
        try await Self.run(backend) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let notes = try steps(token: token)
            var statuses: [String] = []
            for index in [2, 0, 2, 1, 0, 1] {
                statuses.append(try await api.postV2(notes[index]).json["status"] as? String ?? "?")
            }
            #expect(statuses == ["accepted", "accepted", "duplicate", "accepted", "duplicate", "duplicate"])
            #expect(comparable(try await api.customer("u1")) == inOrder)
        }
    }

    /// The hot read serves the answer rendered at ingest; it must be, byte for byte, the answer the
    /// engine gives from the facts at that moment, and it must stop being used once time alone
    /// changes the answer.
    @Test(.enabled(if: testFastPaths.enabled, "rendered answers are the projection cache's"), arguments: StoredBackend.all)
    func theRenderedAnswerIsTheEvaluatedAnswer(backend: StoredBackend) async throws {
        try await Self.run(backend) { api in
            let ledger = FactLedger(
                store: api.store, policy: api.configuration.policy, cache: testFastPaths.projectionCache())
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            for note in try steps(token: token) {
                #expect(try await api.postV2(note).status == 200)
                let now = api.clock.nowMilliseconds()
                let context = ledger.answerContext(now: now)
                let rendered = try #require(try await ledger.renderedCustomer(appUserId: "u1", context: context))
                let evaluated = try await ledger.customer(appUserId: "u1", context: context)
                let expected = try JSONEncoder.entitledDefault.encode(
                    CustomerBody(customer: evaluated.customer, state: evaluated.state, now: now))
                #expect(rendered.body(serverTime: now) == Array(expected))
                #expect(try await api.customer("u1").body == Array(expected))
                // SQLite reads at once on the calling thread (the poll thread's fast path);
                // PostgreSQL always needs its round trip.
                let immediate = try ledger.renderedCustomerNow(appUserId: "u1", context: context)
                #expect(immediate == (backend == .sqlite ? rendered : nil))
            }
            // At the expiry the stored answer no longer holds: reads evaluate instead.
            let expiry = try #require(
                try await ledger.renderedCustomer(
                    appUserId: "u1",
                    context: ledger.answerContext(now: api.clock.nowMilliseconds())
                )?.nextChangeAt)
            let late = ledger.answerContext(now: expiry)
            #expect(try await ledger.renderedCustomer(appUserId: "u1", context: late) == nil)
            // An `?environment=` filter is another answer than the stored, merged one.
            for environment in [Environment.production, .sandbox] {
                let filtered = EvaluationContext(policy: ledger.policy, environment: environment, now: api.clock.nowMilliseconds())
                #expect(try await ledger.renderedCustomer(appUserId: "u1", context: filtered) == nil)
            }
        }
    }

    @Test(arguments: StoredBackend.all)
    func aForgedNotificationIsRecordedAndNothingIsApplied(backend: StoredBackend) async throws {
        try await Self.run(backend) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let genuine = try steps(token: token)[1]
            var parts = genuine.split(separator: ".").map(String.init)
            var signature = Array(parts[2])
            signature[10] = signature[10] == "A" ? "B" : "A"
            parts[2] = String(signature)
            let reply = try await api.postV2(parts.joined(separator: "."))
            #expect(reply.status == 400)
            #expect(reply.code == "INVALID_SIGNATURE")
            #expect(try await api.store.facts(appUserId: "u1").isEmpty)
            #expect(try await api.customer("u1").json["state"] as? String == "new")
            // The genuine one still goes through afterwards: the forgery did not take its UUID.
            #expect(try await api.postV2(genuine).json["status"] as? String == "accepted")
        }
    }

    @Test(arguments: StoredBackend.all)
    func aPurchaseArrivingBeforeTheCustomerIsLinkedByToken(backend: StoredBackend) async throws {
        try await Self.run(backend) { api in
            // The app made up the token (its own UUID) and Apple's notification beats the app's first GET.
            let token = UUID().uuidString.lowercased()
            #expect(try await api.postV2(try steps(token: token)[1]).status == 200)
            let transaction = Apple.transaction(tid: "t9", purchase: t0 - Self.day, expires: t0 + 29 * Self.day, token: token)
            let posted = try await api.send(
                "POST", "/v1/customers/u7/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(try TestSigning.ca.signer.sign(transaction))"}"#)
            #expect(posted.status == 200)
            #expect(posted.entitlement("pro")?["active"] as? Bool == true)
        }
    }
}

/// Repeated reads reuse the encoded answer with a fresh `serverTime`, and never serve a stale one.
@Suite struct CachedReadTests {
    @Test func serverTimeMovesAndChangesShowAtOnce() async throws {
        try await StoredAPITests.run(.sqlite) { api in
            let first = try await api.customer("u1")
            api.clock.advance(by: 1_500)
            let second = try await api.customer("u1")
            #expect(first.json["serverTime"] as? String == "2027-01-15T08:00:00.000Z")
            #expect(second.json["serverTime"] as? String == "2027-01-15T08:00:01.500Z")
            var a = first.json, b = second.json
            a.removeValue(forKey: "serverTime")
            b.removeValue(forKey: "serverTime")
            #expect(a as NSDictionary == b as NSDictionary)
            #expect(second.json["state"] as? String == "new")

            let token = try #require(first.json["appAccountToken"] as? String)
            let notes = try StoredAPITests().steps(token: token)
            #expect(try await api.postV2(notes[1]).status == 200)
            let third = try await api.customer("u1")
            #expect(third.json["state"] as? String == "active")
            #expect(third.json["serverTime"] as? String == "2027-01-15T08:00:01.500Z")
        }
    }
}
