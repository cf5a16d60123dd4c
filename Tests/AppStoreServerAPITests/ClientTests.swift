import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledCrypto
import Foundation
import HTTPClient
import Testing

@Suite struct TokenTests {
    struct Header: Decodable {
        var alg: String
        var kid: String
        var typ: String
    }

    struct Claims: Decodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }

    @Test func tokenHasApplesShapeAndVerifiesWithThePublicKey() throws {
        let fixture = try Fixture()
        let issuer = APITokenIssuer(credentials: fixture.credentials, clock: fixture.clock)
        let token = try issuer.token()
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let header = try JSONDecoder().decode(Header.self, from: Data(try #require(Base64.urlDecode(parts[0]))))
        let claims = try JSONDecoder().decode(Claims.self, from: Data(try #require(Base64.urlDecode(parts[1]))))
        #expect(header.alg == "ES256" && header.kid == "ABC123DEFG" && header.typ == "JWT")
        #expect(claims.iss == issuerId && claims.aud == "appstoreconnect-v1" && claims.bid == bundleId)
        #expect(claims.iat == start / 1000)
        #expect(claims.exp > claims.iat && claims.exp - claims.iat <= 3600)
        let signature = try #require(Base64.urlDecode(parts[2]))
        #expect(signature.count == 64)
        #expect(try fixture.key.publicKey.isValidES256Signature(raw: signature, for: Array((parts[0] + "." + parts[1]).utf8)))
        // The fake Server API's checker (Apple's rules) accepts it too.
        let checker = APITokenVerifier(
            keys: [APIKey(keyId: "ABC123DEFG", issuerId: issuerId, publicKey: try fixture.key.publicKey)], bundleId: bundleId)
        #expect(checker.failureReason(authorization: "Bearer " + token, nowSeconds: start / 1000) == nil)
    }

    @Test func tokenIsCachedAndRenewedBeforeItExpires() throws {
        let fixture = try Fixture()
        let issuer = APITokenIssuer(credentials: fixture.credentials, clock: fixture.clock, lifetimeSeconds: 1800, renewBeforeSeconds: 300)
        let first = try issuer.token()
        fixture.clock.advance(milliseconds: 1_400_000)  // 1400 s: 400 s left
        #expect(try issuer.token() == first)
        fixture.clock.advance(milliseconds: 101_000)  // 299 s left: renewed
        let second = try issuer.token()
        #expect(second != first)
        #expect(try issuer.token() == second)
    }

    @Test func lifetimeIsCappedAtApplesSixtyMinutes() throws {
        let fixture = try Fixture()
        let issuer = APITokenIssuer(credentials: fixture.credentials, clock: fixture.clock, lifetimeSeconds: 7200)
        #expect(issuer.lifetimeSeconds == 3600)
    }
}

@Suite struct RetryTests {
    @Test(arguments: [
        (0.0, [250, 500, 1000, 2000] as [Int64]),
        (0.999_999_9, [499, 999, 1999, 3999] as [Int64]),
    ])
    func backoffDoublesWithJitterInTheUpperHalf(random: Double, expected: [Int64]) {
        let policy = RetryPolicy(maxAttempts: 5, baseDelayMilliseconds: 500, maxDelayMilliseconds: 30_000)
        #expect((1...4).map { policy.delayMilliseconds(beforeRetry: $0, random: random) } == expected)
    }

    @Test func backoffIsCapped() {
        let policy = RetryPolicy(baseDelayMilliseconds: 500, maxDelayMilliseconds: 4000)
        #expect(policy.delayMilliseconds(beforeRetry: 10, random: 0) == 2000)
        #expect(policy.delayMilliseconds(beforeRetry: 60, random: 0.5) == 3000)
    }

    @Test func serverErrorsAndNetworkFailuresAreRetriedOnTheInjectedSleeper() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([
            json(503, ""), .failure(OutboundHTTPError(message: "connection refused")), json(500, #"{"errorCode":5000001}"#),
            json(200, #"{"testNotificationToken":"t-1"}"#),
        ])
        let sleeper = RecordingSleeper()
        let client = fixture.client(transport, sleeper: sleeper)
        #expect(try await client.requestTestNotification() == "t-1")
        #expect(sleeper.recorded == [250, 500, 1000])
        #expect(transport.sent.count == 4)
    }

    @Test func retriesAreBounded() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport(Array(repeating: json(503, #"{"errorCode":5000000,"errorMessage":"down"}"#), count: 10))
        let sleeper = RecordingSleeper()
        let client = fixture.client(transport, sleeper: sleeper, settings: .init(retry: RetryPolicy(maxAttempts: 3)))
        let error = await apiError { _ = try await client.requestTestNotification() }
        #expect(error == .apple(status: 503, code: .generalInternal, message: "down"))
        #expect(error?.code == "APPLE_UNAVAILABLE")
        #expect(transport.sent.count == 3)
        #expect(sleeper.recorded.count == 2)
    }

    @Test func rateLimitWaitsForRetryAfterElseBacksOff() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([
            json(429, #"{"errorCode":4290000}"#, headers: ["Retry-After": "7"]), json(429, #"{"errorCode":4290000}"#),
            json(200, #"{"testNotificationToken":"t-2"}"#),
        ])
        let sleeper = RecordingSleeper()
        #expect(try await fixture.client(transport, sleeper: sleeper).requestTestNotification() == "t-2")
        #expect(sleeper.recorded == [7000, 500])
    }

    @Test func clientErrorsAreNotRetried() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([json(400, #"{"errorCode":4000006,"errorMessage":"Invalid transaction id."}"#)])
        let sleeper = RecordingSleeper()
        let error = await apiError { _ = try await fixture.client(transport, sleeper: sleeper).transactionInfo("x") }
        #expect(error?.appleErrorCode == .invalidTransactionId)
        #expect(error?.code == "APPLE_REJECTED")
        #expect(sleeper.recorded.isEmpty)
    }
}

@Suite struct ClientBehaviourTests {
    @Test func unauthorizedNamesTheAppAndTheKey() async throws {
        let fixture = try Fixture()
        let error = await apiError { _ = try await fixture.client(ScriptedTransport([json(401, "")])).requestTestNotification() }
        #expect(error == .unauthorized(bundleId: bundleId, keyId: "ABC123DEFG"))
        #expect(error?.code == "APPLE_KEY_REJECTED")
        #expect(error?.description.contains(bundleId) == true)
    }

    @Test(arguments: [AppStoreEnvironment.xcode, .localTesting])
    func localEnvironmentsNeverCallOut(environment: AppStoreEnvironment) async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([])
        let client = fixture.client(transport, settings: .init(environment: environment))
        let error = await apiError { _ = try await client.transactionInfo("1") }
        #expect(error == .environmentNotCallable(environment))
        #expect(transport.sent.isEmpty)
    }

    @Test func hostsPathsAndBaseURLOverride() async throws {
        let fixture = try Fixture()
        let signed = try fixture.transaction("1000")
        let body = #"{"signedTransactionInfo":"\#(signed)"}"#
        let production = ScriptedTransport([json(200, body)])
        _ = try await fixture.client(production).transactionInfo("1000")
        #expect(production.sent.first?.url.absoluteString == "https://api.storekit.apple.com/inApps/v1/transactions/1000")
        #expect(production.sent.first?.headers["Authorization"]?.hasPrefix("Bearer ") == true)
        let sandbox = ScriptedTransport([json(200, #"{"signedTransactionInfo":"\#(try fixture.transaction("1000", environment: .sandbox))"}"#)])
        _ = try await fixture.client(sandbox, settings: .init(environment: .sandbox)).transactionInfo("1000")
        #expect(sandbox.sent.first?.url.absoluteString == "https://api.storekit-sandbox.apple.com/inApps/v1/transactions/1000")
        let legacy = ScriptedTransport([json(200, body), json(200, body)])
        let legacyClient = fixture.client(legacy, settings: .init(hosts: .legacy))
        _ = try await legacyClient.transactionInfo("1000")
        #expect(legacy.sent.first?.url.absoluteString == "https://api.storekit.itunes.apple.com/inApps/v1/transactions/1000")
        #expect(try legacyClient.baseURL(for: .sandbox).absoluteString == "https://api.storekit-sandbox.itunes.apple.com")
        let proxied = ScriptedTransport([json(200, body)])
        _ = try await fixture.client(proxied, settings: .init(hosts: .legacy, baseURL: URL(string: "http://127.0.0.1:9/")!)).transactionInfo("10/00")
        #expect(proxied.sent.first?.url.absoluteString == "http://127.0.0.1:9/inApps/v1/transactions/10%2F00")
    }

    @Test(arguments: [true, false])
    func productionNotFoundFallsBackToSandboxOnlyWhenAllowed(fallback: Bool) async throws {
        let fixture = try Fixture()
        let notFound = json(404, #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#)
        let transport = ScriptedTransport([
            notFound, json(200, #"{"signedTransactionInfo":"\#(try fixture.transaction("77", environment: .sandbox))"}"#),
        ])
        let client = fixture.client(transport, settings: .init(environment: .production, sandboxFallback: fallback))
        if fallback {
            let found = try await client.transactionInfo("77")
            #expect(found.payload.environment == .sandbox)
            #expect(transport.sent.map { $0.url.host ?? "" } == ["api.storekit.apple.com", "api.storekit-sandbox.apple.com"])
        } else {
            let error = await apiError { _ = try await client.transactionInfo("77") }
            #expect(error?.appleErrorCode == .transactionIdNotFound)
            #expect(error?.code == "APPLE_NOT_FOUND")
            #expect(transport.sent.count == 1)
        }
    }

    @Test func signedPayloadsAreVerifiedBeforeUse() async throws {
        let fixture = try Fixture()
        let stranger = try SimulatorCA.ephemeral()  // a chain the verifier does not trust
        let forged = try stranger.signer.sign(
            JWSTransactionDecodedPayload(transactionId: "1", bundleId: bundleId, signedDate: start, environment: .production))
        let client = fixture.client(ScriptedTransport([json(200, #"{"signedTransactionInfo":"\#(forged)"}"#)]))
        let error = await apiError { _ = try await client.transactionInfo("1") }
        #expect(error?.code == "APPLE_PAYLOAD_UNVERIFIED")
    }

    @Test func requestBodiesAreApples() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([json(202, ""), json(202, ""), json(200, ""), json(200, "")])
        let client = fixture.client(transport)
        try await client.sendConsumptionInformation(
            transactionId: "5", ConsumptionRequestV2(customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false))
        try await client.sendConsumptionInformationV1(transactionId: "5", ConsumptionRequest(customerConsented: true, deliveryStatus: .deliveredAndWorkingProperly))
        try await client.setAppAccountToken(originalTransactionId: "5", appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        try await client.finishTransaction("5")
        let sent = transport.sent
        #expect(sent.map(\.method) == ["PUT", "PUT", "PUT", "POST"])
        #expect(sent.map(\.url.path) == [
            "/inApps/v2/transactions/consumption/5", "/inApps/v1/transactions/consumption/5", "/inApps/v1/transactions/5/appAccountToken",
            "/inApps/v1/transactions/5/finish",
        ])
        #expect(sent[3].body == nil)
        #expect(String(decoding: sent[0].body ?? [], as: UTF8.self)
            == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)
        #expect(String(decoding: sent[1].body ?? [], as: UTF8.self) == #"{"customerConsented":true,"deliveryStatus":0}"#)
        #expect(sent[0].headers["Content-Type"] == "application/json")
    }
}
