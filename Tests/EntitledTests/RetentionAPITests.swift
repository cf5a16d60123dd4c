import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Storage
import Testing

/// `POST /v1/apple/retention` with the real verifier and requests signed by a test CA: the rules
/// answer, a promotional offer is signed with the app's key, anything forged, misaddressed or from
/// an environment the app does not accept is refused and recorded nowhere; each request is kept
/// and what became of its subscription shows in `GET /v1/retention/save-rates`.
@Suite(.serialized) struct RetentionAPITests {
    static let ca = SignedAPITests.ca
    static let key = try! P256PrivateKey()
    static let t0 = APIHarness.start
    static let day: Int64 = 86_400_000
    static let offerMessage = "6f0e7c34-5f3a-4a59-9a53-0f6b3f1d2a10"
    static let defaultMessage = "0b7b1f3e-2d44-4c8e-8b8f-1a2b3c4d5e6f"

    static func configuration(environments: [String] = ["Production", "Sandbox"]) throws -> Configuration {
        var configuration = try SignedAPITests.configuration(trusting: ca, environments: environments)
        configuration.apps[0].products[0].promotionalOffers = ["half"]
        configuration.apps[0].signingKey = SigningKeySettings(
            keyId: "KEY123", issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: try key.pkcs8PEM())
        configuration.apps[0].retention = RetentionRuleSet(
            rules: [
                RetentionRule(
                    id: "monthly-offer", when: RetentionCondition(productIds: ["pro.monthly"], storefronts: ["USA"]),
                    respond: .promotionalOffer(messageIdentifier: offerMessage, offerId: "half"))
            ],
            defaultAnswer: .message(messageIdentifier: defaultMessage))
        return configuration
    }

    static func run(
        environments: [String] = ["Production", "Sandbox"], metrics: ServerMetrics = ServerMetrics(),
        _ body: (APIHarness) async throws -> Void
    ) async throws {
        let configuration = try configuration(environments: environments)
        let clock = VirtualClock(t0)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock, metrics: metrics, body)
    }

    /// The value of `entitled_retention_requests_total{answer="…"}`, 0 when absent.
    static func answered(_ metrics: ServerMetrics, _ answer: String) -> Int {
        let prefix = #"entitled_retention_requests_total{answer="\#(answer)"} "#
        let line = metrics.registry.render().split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Double($0.dropFirst(prefix.count)) }.map { Int($0) } ?? 0
    }

    static func request(
        otid: String = "o1", appAppleId: Int64 = 1234, environment: AppStoreEnvironment = .production, signedAt: Int64 = t0,
        signer: JWSSigner = ca.signer, id: String = UUID().uuidString
    ) throws -> String {
        try signer.sign(
            DecodedRealtimeRequestBody(
                originalTransactionId: otid, appAppleId: appAppleId, productId: "pro.monthly", userLocale: "en-US",
                requestIdentifier: id, environment: environment, signedDate: signedAt))
    }

    static func ask(_ api: APIHarness, _ signedPayload: String) async throws -> Loopback.Reply {
        try await api.send("POST", "/v1/apple/retention", json: #"{"signedPayload":"\#(signedPayload)"}"#)
    }

    /// A signed notification: `tid` of subscription `otid` bought at `purchase`, for the customer with `token`.
    static func subscribe(
        _ api: APIHarness, token: String, otid: String, tid: String, purchase: Int64, expires: Int64, autoRenew: Bool = true,
        type: NotificationType = .subscribed
    ) async throws {
        let transaction = Apple.transaction(otid: otid, tid: tid, purchase: purchase, expires: expires, token: token)
        let renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: otid, autoRenewProductId: "pro.monthly", productId: "pro.monthly",
            autoRenewStatus: autoRenew ? .on : .off, signedDate: api.clock.nowMilliseconds(), environment: .production)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: nil, notificationUUID: UUID().uuidString,
            data: NotificationData(
                environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                signedTransactionInfo: try ca.signer.sign(transaction), signedRenewalInfo: try ca.signer.sign(renewal)),
            version: "2.0", signedDate: api.clock.nowMilliseconds())
        let reply = try await api.postV2(try ca.signer.sign(payload))
        #expect(reply.status == 200)
    }

    static func token(_ api: APIHarness, _ user: String) async throws -> String {
        try #require(try await api.customer(user).json["appAccountToken"] as? String)
    }

    /// Waits for the recorder's batch (written within 100 ms of the request).
    static func recorded(_ api: APIHarness, _ expected: Int) async throws -> Int {
        for _ in 0..<100 {
            let count = try await api.ledger.count("SELECT COUNT(*) FROM retention_requests")
            if count >= expected { return count }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await api.ledger.count("SELECT COUNT(*) FROM retention_requests")
    }

    @Test func aSubscriberGetsTheRulesPromotionalOfferSignedWithTheAppsKey() async throws {
        let metrics = ServerMetrics()
        try await Self.run(metrics: metrics) { api in
            try await Self.subscribe(
                api, token: try await Self.token(api, "u1"), otid: "o1", tid: "t1", purchase: Self.t0 - 40 * Self.day,
                expires: Self.t0 + 20 * Self.day)
            let reply = try await Self.ask(api, try Self.request())
            #expect(reply.status == 200)
            #expect(reply.json.keys.sorted() == ["promotionalOffer"])
            let offer = try #require(reply.json["promotionalOffer"] as? [String: Any])
            #expect(offer["messageIdentifier"] as? String == Self.offerMessage)
            let jws = try #require(offer["promotionalOfferSignatureV2"] as? String)
            let claims = try OfferSigningAPITests.claims(jws, key: Self.key)
            #expect(claims["productId"] as? String == "pro.monthly")
            #expect(claims["offerIdentifier"] as? String == "half")
            #expect(claims["transactionId"] as? String == "o1")
            #expect(claims["bid"] as? String == APIHarness.bundleId)
            #expect(claims["aud"] as? String == "promotional-offer")
            #expect(Self.answered(metrics, "promotionalOffer") == 1)
            #expect(try await Self.recorded(api, 1) == 1)
            #expect(
                try await api.ledger.count(
                    "SELECT COUNT(*) FROM retention_requests WHERE rule_id = 'monthly-offer' AND answer_kind = 'promotionalOffer' AND offer_id = 'half'")
                    == 1)
        }
    }

    @Test func anUnknownSubscriptionGetsTheDefault() async throws {
        try await Self.run { api in
            let reply = try await Self.ask(api, try Self.request(otid: "never-seen"))
            #expect(reply.status == 200)
            #expect(reply.json.keys.sorted() == ["message"])
            #expect((reply.json["message"] as? [String: Any])?["messageIdentifier"] as? String == Self.defaultMessage)
            #expect(try await Self.recorded(api, 1) == 1)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM retention_requests WHERE rule_id = 'default'") == 1)
        }
    }

    /// Each way a request can be wrong, and the code it is refused with: never an answer body.
    @Test(arguments: [
        ("forged", "CHAIN_UNTRUSTED"), ("otherApp", "INVALID_APP_IDENTIFIER"), ("wrongEnvironment", "INVALID_ENVIRONMENT"),
        ("badSignature", "INVALID_SIGNATURE"), ("notAJWS", "INVALID_JWT_FORMAT"),
    ])
    func aBadRequestIsRefused(kind: String, code: String) async throws {
        let metrics = ServerMetrics()
        try await Self.run(environments: ["Production"], metrics: metrics) { api in
            let payload: String
            switch kind {
            case "forged": payload = try Self.request(signer: try TestCertificateAuthority(options: .init(name: "Mallory")).signer)
            case "otherApp": payload = try Self.request(appAppleId: 9999)
            case "wrongEnvironment": payload = try Self.request(environment: .sandbox)
            case "badSignature":
                var parts = try Self.request().split(separator: ".").map(String.init)
                var signature = Array(parts[2])
                signature[20] = signature[20] == "A" ? "B" : "A"
                parts[2] = String(signature)
                payload = parts.joined(separator: ".")
            default: payload = "not-a-jws"
            }
            let reply = try await Self.ask(api, payload)
            #expect(reply.status >= 400 && reply.status < 500)
            #expect(reply.code == code)
            #expect(reply.json["message"] == nil && reply.json["promotionalOffer"] == nil && reply.json["alternateProduct"] == nil)
            #expect(Self.answered(metrics, "refused") == 1)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM retention_requests") == 0)
        }
    }

    /// An app that lists Xcode accepts Xcode payloads unsigned; a realtime request is Apple's
    /// only, so one claiming Xcode is refused even then.
    @Test func anUnsignedXcodeRequestIsRefused() async throws {
        try await Self.run(environments: ["Production", "Sandbox", "Xcode"]) { api in
            let mallory = try TestCertificateAuthority(options: .init(name: "Mallory")).signer
            let reply = try await Self.ask(api, try Self.request(environment: .xcode, signer: mallory))
            #expect(reply.code == "INVALID_ENVIRONMENT")
            #expect(reply.json["message"] == nil)
        }
    }

    @Test func withoutRetentionRulesEveryRequestIsRefused() async throws {
        var configuration = try Self.configuration()
        configuration.apps[0].retention = nil
        let clock = VirtualClock(Self.t0)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock) { api in
            let reply = try await Self.ask(api, try Self.request())
            #expect(reply.code == "INVALID_APP_IDENTIFIER")
        }
    }

    /// The server as `serve` composes it (its verifier timed into the metrics) answers as well.
    @Test func theComposedServerVerifiesRequestsToo() async throws {
        let store = try await openStore(url: "sqlite::memory:")
        let assembled = try await buildApplication(configuration: try Self.configuration(), clock: VirtualClock(Self.t0), store: store)
        var settings = HTTPServer.Configuration()
        settings.host = "127.0.0.1"
        settings.port = 0
        settings.accessLog = nil
        settings.errorLog = nil
        let http = HTTPServer(configuration: settings, router: assembled.application.router)
        try http.start()
        let reply = try await Loopback.send(
            port: http.port, "POST", "/v1/apple/retention", headers: ["Content-Type": "application/json"],
            body: Array(#"{"signedPayload":"\#(try Self.request(otid: "never-seen"))"}"#.utf8))
        await http.shutdown()
        await store.close()
        #expect(reply.status == 200)
        #expect((reply.json["message"] as? [String: Any])?["messageIdentifier"] as? String == Self.defaultMessage)
    }

    /// Storage down: 503 at once and no answer body, so that Apple shows its own default; once
    /// storage is back, requests are answered and kept again.
    @Test func anInternalFailureAnswersAtOnceWithoutAMessage() async throws {
        let metrics = ServerMetrics()
        try await Self.run(metrics: metrics) { api in
            api.ledger.available = false
            let reply = try await Self.ask(api, try Self.request(otid: "o1"))
            #expect(reply.status == 503)
            #expect(Self.answered(metrics, "failed") == 1)
            #expect(reply.json["message"] == nil && reply.json["promotionalOffer"] == nil)
            api.ledger.available = true
            #expect(try await Self.ask(api, try Self.request(otid: "never-seen")).status == 200)
            #expect(try await Self.recorded(api, 1) == 1)
        }
    }

    /// Apple retries with the same requestIdentifier: the record keeps one row.
    @Test func aRetriedRequestIsRecordedOnce() async throws {
        try await Self.run { api in
            let payload = try Self.request(otid: "never-seen", id: "same-request")
            #expect(try await Self.ask(api, payload).status == 200)
            #expect(try await Self.recorded(api, 1) == 1)
            #expect(try await Self.ask(api, payload).status == 200)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM retention_requests") == 1)
        }
    }

    /// Two subscribers ask at t0: one renews after the answer (saved), the other lets the
    /// subscription expire (lost); a third is still undecided. The report attributes each.
    @Test func theSaveRateAttributesEachSubscriptionsFate() async throws {
        try await Self.run { api in
            let start = Self.t0 - 40 * Self.day
            let end = Self.t0 + 20 * Self.day
            try await Self.subscribe(api, token: try await Self.token(api, "u1"), otid: "o1", tid: "t1", purchase: start, expires: end)
            try await Self.subscribe(
                api, token: try await Self.token(api, "u2"), otid: "o2", tid: "t2", purchase: start, expires: end, autoRenew: false)
            try await Self.subscribe(
                api, token: try await Self.token(api, "u3"), otid: "o3", tid: "t3", purchase: start, expires: Self.t0 + 200 * Self.day)
            for otid in ["o1", "o2", "o3"] {
                #expect(try await Self.ask(api, try Self.request(otid: otid)).status == 200)
            }
            #expect(try await Self.recorded(api, 3) == 3)
            // Before anything happened: all undecided.
            api.clock.advance(by: Self.day)
            var report = try await api.send("GET", "/v1/retention/save-rates", auth: APIHarness.admin)
            #expect(report.status == 200)
            var rule = try #require((report.json["rules"] as? [[String: Any]])?.first)
            #expect(rule["ruleId"] as? String == "monthly-offer")
            #expect(rule["requests"] as? Int == 3)
            #expect(rule["undecided"] as? Int == 3)
            #expect(rule["saveRate"] is NSNull)

            // o1 renews at the end of its period; o2 expires.
            api.clock.advance(by: end + Self.day - api.clock.nowMilliseconds())
            try await Self.subscribe(
                api, token: try await Self.token(api, "u1"), otid: "o1", tid: "t1b", purchase: end, expires: end + 30 * Self.day,
                type: .didRenew)
            report = try await api.send("GET", "/v1/retention/save-rates?days=30", auth: APIHarness.admin)
            rule = try #require((report.json["rules"] as? [[String: Any]])?.first)
            #expect(rule["renewed"] as? Int == 1)
            #expect(rule["expired"] as? Int == 1)
            #expect(rule["undecided"] as? Int == 1)
            #expect(rule["saveRate"] as? Double == 0.5)
            // A reader key may not see it.
            #expect(try await api.send("GET", "/v1/retention/save-rates", auth: APIHarness.reader).status == 403)
        }
    }
}
