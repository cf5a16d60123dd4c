import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Testing

/// `POST /v1/customers/{appUserId}/offers/sign` and the answer's `offers`: signatures the customer
/// may have, verifiable with the app's key, each logged; typed problems for the rest.
@Suite struct OfferSigningAPITests {
    static let key = try! P256PrivateKey()
    static let day: Int64 = 86_400_000
    static let t0 = APIHarness.start
    static let tokens = CustomerTokenVerifier(secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests())

    static func configuration(signing: Bool = true) -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apps[0].products[0].promotionalOffers = ["half"]
        configuration.apps[0].products[0].winBackOffers = [WinBackOfferRule(offerId: "comeback", minimumLapsedDays: 30)]
        if signing {
            configuration.apps[0].signingKey = SigningKeySettings(
                keyId: "KEY123", issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: try! key.pkcs8PEM())
        }
        return configuration
    }

    static func sign(_ api: APIHarness, _ body: String, user: String = "u1", auth: String = APIHarness.writer) async throws
        -> Loopback.Reply
    {
        try await api.send("POST", "/v1/customers/\(user)/offers/sign", auth: auth, json: body)
    }

    /// u1 subscribed to pro.monthly from t0 − 40 days to t0 − 10 days (expired now).
    static func lapsedSubscriber(_ api: APIHarness) async throws {
        let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
        let reply = try await api.postV2(
            Apple.notification(
                .subscribed, .initialBuy, signed: t0 - 40 * day,
                transaction: Apple.transaction(tid: "t1", purchase: t0 - 40 * day, expires: t0 - 10 * day, token: token),
                renewal: Apple.renewal(signed: t0 - 40 * day)))
        #expect(reply.status == 200)
    }

    static func claims(_ jws: String, key: P256PrivateKey = key) throws -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signature = try #require(Base64.urlDecode(parts[2]))
        #expect(try key.publicKey.isValidES256Signature(raw: signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        let claimBytes = try #require(Base64.urlDecode(parts[1]))
        return try #require(try JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any])
    }

    @Test func promotionalV1VerifiesAndIsLogged() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.lapsedSubscriber(api)
            let customer = try await api.customer("u1")
            let offers = try #require(customer.json["offers"] as? [String: Any])
            #expect(offers["introductory"] as? [String] == [])
            #expect((offers["promotional"] as? [[String: String]]) == [["productId": "pro.monthly", "offerId": "half"]])
            #expect((offers["winBack"] as? [[String: String]]) == [])
            let token = try #require(customer.json["appAccountToken"] as? String)

            let reply = try await Self.sign(api, #"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"v1"}"#)
            #expect(reply.status == 200)
            #expect(reply.headers["cache-control"] == "no-store")
            let nonce = try #require(reply.json["nonce"] as? String)
            #expect(reply.json["keyId"] as? String == "KEY123")
            #expect(reply.json["timestamp"] as? Int64 == Self.t0)
            let signature = try #require(reply.json["signature"] as? String)
            let der = try #require(Base64.decode(signature))
            let message = [APIHarness.bundleId, "KEY123", "pro.monthly", "half", token.lowercased(), nonce, String(Self.t0)]
                .joined(separator: "\u{2063}")
            #expect(try Self.key.publicKey.isValidSignature(der: der, for: Array(message.utf8)))
            #expect(nonce == nonce.lowercased())

            let logged = try await api.ledger.texts(
                "SELECT app_user_id || ' ' || product_id || ' ' || offer_id || ' ' || kind || ' ' || format || ' ' || nonce || ' ' || signed_at FROM offer_signatures")
            #expect(logged == ["u1 pro.monthly half promotional v1 \(nonce) \(Self.t0)"])
        }
    }

    @Test func promotionalJWSCarriesTheCustomersTransaction() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.lapsedSubscriber(api)
            let reply = try await Self.sign(api, #"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"jws"}"#)
            #expect(reply.status == 200)
            let claims = try Self.claims(try #require(reply.json["jws"] as? String))
            #expect(Set(claims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier", "transactionId"])
            #expect(claims["aud"] as? String == "promotional-offer")
            #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
            #expect(claims["bid"] as? String == APIHarness.bundleId)
            #expect(claims["iat"] as? Int64 == Self.t0 / 1000)
            #expect(claims["transactionId"] as? String == "t1")
            #expect(claims["nonce"] as? String == reply.json["nonce"] as? String)
        }
    }

    @Test func introductoryEligibilityIsDecidedFromTheLedger() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let body = #"{"productId":"pro.yearly","kind":"introductoryEligibility","format":"jws"}"#
            // Never subscribed: eligible, and no transactionId to give.
            let fresh = try await Self.sign(api, body, user: "u2")
            #expect(fresh.status == 200)
            #expect(fresh.json["allowIntroductoryOffer"] as? Bool == true)
            let freshClaims = try Self.claims(try #require(fresh.json["jws"] as? String))
            #expect(Set(freshClaims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "allowIntroductoryOffer"])
            #expect(freshClaims["aud"] as? String == "introductory-offer-eligibility")
            #expect(freshClaims["allowIntroductoryOffer"] as? Bool == true)
            // Paid full price for another product of the same group: not eligible.
            try await Self.lapsedSubscriber(api)
            let paid = try await Self.sign(api, body)
            #expect(paid.json["allowIntroductoryOffer"] as? Bool == false)
            let paidClaims = try Self.claims(try #require(paid.json["jws"] as? String))
            #expect(paidClaims["allowIntroductoryOffer"] as? Bool == false)
            #expect(paidClaims["transactionId"] as? String == "t1")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offer_signatures WHERE offer_id IS NULL") == 2)
        }
    }

    @Test func winBackFollowsTheLapseWindow() async throws {
        let clock = VirtualClock(Self.t0)
        try await APIHarness.run(configuration: Self.configuration(), clock: clock) { api in
            try await Self.lapsedSubscriber(api)
            let body = #"{"productId":"pro.monthly","offerId":"comeback","kind":"winBack","format":"v1"}"#
            // Lapsed 10 days: too recent for a 30-day win-back.
            let early = try await Self.sign(api, body)
            #expect(early.status == 409)
            #expect(early.code == "OFFER_NOT_ELIGIBLE")
            clock.advance(by: 21 * Self.day)
            let later = try await api.customer("u1")
            let offers = try #require(later.json["offers"] as? [String: Any])
            #expect((offers["winBack"] as? [[String: String]]) == [["productId": "pro.monthly", "offerId": "comeback"]])
            #expect(try await Self.sign(api, body).status == 200)
        }
    }

    @Test(arguments: [
        (#"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"v1"}"#, 409, "OFFER_NOT_ELIGIBLE"),
        (#"{"productId":"pro.monthly","offerId":"nope","kind":"promotional","format":"v1"}"#, 404, "OFFER_NOT_FOUND"),
        (#"{"productId":"lifetime","offerId":"half","kind":"promotional","format":"v1"}"#, 404, "PRODUCT_NOT_FOUND"),
        (#"{"productId":"unknown","kind":"introductoryEligibility","format":"jws"}"#, 404, "PRODUCT_NOT_FOUND"),
        (#"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"v1"}"#, 400, "INVALID_REQUEST"),
        (#"{"productId":"pro.monthly","kind":"promotional","format":"v1"}"#, 400, "INVALID_REQUEST"),
        (#"{"productId":"pro.monthly","offerId":"half","kind":"gift","format":"v1"}"#, 400, "INVALID_REQUEST"),
        (#"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"v2"}"#, 400, "INVALID_REQUEST"),
        (#"{"productId":"pro.monthly","offerId":"ha\u2063lf","kind":"promotional","format":"v1"}"#, 400, "INVALID_REQUEST"),
        (#"{"productId":"","kind":"introductoryEligibility","format":"jws"}"#, 400, "INVALID_REQUEST"),
        (#"{"offerId":"half"}"#, 400, "INVALID_JSON"),
    ])
    func badRequestsAreTypedProblems(body: String, status: Int, code: String) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let reply = try await Self.sign(api, body, user: "new-customer")
            #expect(reply.status == status)
            #expect(reply.code == code)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offer_signatures") == 0)
        }
    }

    @Test func aStorageOutageAnswers503WithoutASignature() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            api.ledger.available = false
            let reply = try await Self.sign(api, #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#)
            #expect(reply.status == 503)
            #expect(reply.code == "STORAGE_UNAVAILABLE")
            #expect(reply.json["jws"] == nil)
        }
    }

    @Test func withoutASigningKeyTheAppSignsNothing() async throws {
        try await APIHarness.run(configuration: Self.configuration(signing: false)) { api in
            let reply = try await Self.sign(api, #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#)
            #expect(reply.status == 409)
            #expect(reply.code == "SIGNING_KEY_NOT_CONFIGURED")
        }
    }

    /// An app that accepts Xcode: a customer token posts an unsigned Xcode subscription (decoded,
    /// never verified). Its answer for Xcode advertises no offer, and nothing is signed for it.
    @Test func anUnsignedXcodePurchaseUnlocksNoSignature() async throws {
        var configuration = Self.configuration()
        configuration.apps[0].environments.append("Xcode")
        let clock = VirtualClock(Self.t0)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock) { api in
            let customer = "Bearer " + Self.tokens.sign(subject: "u1", expiresAt: Self.t0 / 1000 + 60)
            let lapsed = Apple.transaction(tid: "x1", purchase: Self.t0 - 40 * Self.day, expires: Self.t0 - 10 * Self.day, environment: .xcode)
            let posted = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: customer,
                json: #"{"signedTransaction":"\#(FakeJWS.make(lapsed, signature: "AAAA"))"}"#)
            #expect(posted.status == 200)
            let answer = try await api.send("GET", "/v1/customers/u1?environment=Xcode", auth: customer)
            #expect(answer.status == 200)
            #expect((answer.json["subscriptions"] as? [Any])?.isEmpty == false)
            let offers = try #require(answer.json["offers"] as? [String: Any])
            #expect((offers["promotional"] as? [Any])?.isEmpty == true)
            for query in ["?environment=Xcode", ""] {
                for body in [
                    #"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"v1"}"#,
                    #"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"jws"}"#,
                ] {
                    let reply = try await api.send("POST", "/v1/customers/u1/offers/sign\(query)", auth: customer, json: body)
                    #expect(reply.status == 409)
                    #expect(reply.code == "OFFER_NOT_ELIGIBLE")
                }
            }
            let intro = try await api.send(
                "POST", "/v1/customers/u1/offers/sign?environment=Xcode", auth: customer,
                json: #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#)
            #expect(intro.status == 409)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offer_signatures") == 0)
        }
    }

    /// A Sandbox subscriber (TestFlight) read without `?environment`: the answer merges Production
    /// and Sandbox, and signing follows the same rule as the `offers` it advertises.
    @Test func signingWithoutAnEnvironmentFollowsTheAnswersOffers() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let reply = try await api.postV2(
                Apple.notification(
                    .subscribed, .initialBuy, signed: Self.t0 - 40 * Self.day,
                    transaction: Apple.transaction(
                        tid: "s1", purchase: Self.t0 - 40 * Self.day, expires: Self.t0 - 10 * Self.day, token: token, environment: .sandbox),
                    environment: .sandbox))
            #expect(reply.status == 200)
            let offers = try #require(try await api.customer("u1").json["offers"] as? [String: Any])
            #expect((offers["promotional"] as? [[String: String]]) == [["productId": "pro.monthly", "offerId": "half"]])
            let signed = try await Self.sign(api, #"{"productId":"pro.monthly","offerId":"half","kind":"promotional","format":"jws"}"#)
            #expect(signed.status == 200)
            #expect(try Self.claims(try #require(signed.json["jws"] as? String))["transactionId"] as? String == "s1")
            // A product of the group Apple saw them subscribe to: no introductory offer, as advertised.
            let intro = try await Self.sign(api, #"{"productId":"pro.yearly","kind":"introductoryEligibility","format":"jws"}"#)
            #expect(intro.json["allowIntroductoryOffer"] as? Bool == false)
            #expect(offers["introductory"] as? [String] == [])
        }
    }

    /// One customer's token asking as fast as it can: `customerBurst` signatures, then 429 with
    /// `Retry-After` and nothing signed or logged, until the bucket refills; the signing key's own
    /// bucket bounds all customers together.
    @Test func signingIsRateLimitedPerCustomerAndPerKey() async throws {
        var configuration = Self.configuration()
        configuration.offerSigning.customerBurst = 3
        configuration.offerSigning.customerPerMinute = 6
        configuration.offerSigning.keyBurst = 5
        configuration.offerSigning.keyPerSecond = 1
        let clock = VirtualClock(Self.t0)
        try await APIHarness.run(configuration: configuration, clock: clock) { api in
            let token = "Bearer " + Self.tokens.sign(subject: "u1", expiresAt: Self.t0 / 1000 + 600)
            let body = #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#
            var statuses: [Int] = []
            for _ in 0..<5 { statuses.append(try await Self.sign(api, body, user: "u1", auth: token).status) }
            #expect(statuses == [200, 200, 200, 429, 429])
            let refused = try await Self.sign(api, body, user: "u1", auth: token)
            #expect(refused.code == "OFFER_RATE_LIMITED")
            #expect(refused.headers["retry-after"] == "10")
            #expect(refused.json["jws"] == nil)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offer_signatures") == 3)
            // Another customer is not refused for u1's requests, but the key's bucket (5) is shared.
            #expect(try await Self.sign(api, body, user: "u2").status == 200)
            #expect(try await Self.sign(api, body, user: "u3").status == 200)
            let keyBound = try await Self.sign(api, body, user: "u4")
            #expect(keyBound.status == 429)
            #expect(keyBound.headers["retry-after"] == "1")
            clock.advance(by: 10_000)
            #expect(try await Self.sign(api, body, user: "u1", auth: token).status == 200)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offer_signatures") == 6)
        }
    }

    /// The hourly purge deletes logged signatures older than `offerSigning.retentionDays`.
    @Test func loggedSignaturesAreKeptForTheRetention() async throws {
        let clock = VirtualClock(Self.t0)
        try await APIHarness.run(configuration: Self.configuration(), clock: clock) { api in
            let body = #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#
            #expect(try await Self.sign(api, body).status == 200)
            clock.advance(by: 2 * Self.day)
            #expect(try await Self.sign(api, body).status == 200)
            let purge = RejectedPurge(store: api.ledger.store, clock: clock, retentionDays: 30, offerSignatureRetentionDays: 1)
            try await purge.runOnce()
            #expect(try await api.ledger.texts("SELECT CAST(signed_at AS TEXT) FROM offer_signatures") == ["\(Self.t0 + 2 * Self.day)"])
        }
    }

    @Test func theCustomersOwnTokenMaySignOnlyForThatCustomer() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let token = "Bearer " + Self.tokens.sign(subject: "u1", expiresAt: Self.t0 / 1000 + 60)
            let body = #"{"productId":"pro.monthly","kind":"introductoryEligibility","format":"jws"}"#
            let own = try await Self.sign(api, body, user: "u1", auth: token)
            let another = try await Self.sign(api, body, user: "u2", auth: token)
            let readOnly = try await Self.sign(api, body, user: "u1", auth: APIHarness.reader)
            let unknown = try await Self.sign(api, body, user: "u1", auth: "Bearer nope-nope-nope-nope")
            let statuses: [Int] = [own.status, another.status, readOnly.status, unknown.status]
            #expect(statuses == [200, 403, 403, 401])
        }
    }
}
