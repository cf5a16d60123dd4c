import AppStore
import EntitledCrypto
import Foundation
import GooglePlay
import HTTPClient
import Synchronization
import Testing

@Suite struct PushVerifierTests {
    static let audience = "https://entitled.example.com/v1/google/notifications"
    static let account = "pubsub-push@my-project.iam.gserviceaccount.com"
    static let certs = URL(string: "https://www.googleapis.com/oauth2/v3/certs")!

    struct World {
        let clock = TestClock()
        let transport: ScriptedTransport
        let verifier: PushVerifier

        init(kid: String = "key-1", maxAge: String? = "public, max-age=3600, must-revalidate") {
            let set = JWKSet(keys: [JWK(publicKey: try! TestKeys.google.publicKey, kid: kid)])
            let body = PlayJSON.encode(set)
            transport = ScriptedTransport { _ in
                OutboundResponse(status: 200, headers: maxAge.map { ["Cache-Control": $0] } ?? [:], body: body)
            }
            let keys = GoogleKeySet(certsURL: PushVerifierTests.certs, transport: transport, clock: clock)
            verifier = PushVerifier(
                settings: .init(audience: PushVerifierTests.audience, serviceAccountEmail: PushVerifierTests.account), keys: keys, clock: clock)
        }

        var fetches: Int { transport.count(path: "/oauth2/v3/certs") }
    }

    /// Claims as Pub/Sub writes them, at `now`, with `changes` applied (nil removes a claim).
    static func claims(now: Int64, _ changes: [String: JSONClaim?] = [:]) -> [String: JSONClaim] {
        var claims: [String: JSONClaim] = [
            "aud": .string(audience), "azp": .string("113774264463038321964"), "email": .string(account),
            "email_verified": .bool(true), "exp": .int(now + 3600), "iat": .int(now), "iss": .string("https://accounts.google.com"),
            "sub": .string("113774264463038321964"),
        ]
        for (key, value) in changes { claims[key] = value }
        return claims
    }

    enum JSONClaim: Encodable {
        case string(String), bool(Bool), int(Int64), strings([String])
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .string(let v): try c.encode(v)
            case .bool(let v): try c.encode(v)
            case .int(let v): try c.encode(v)
            case .strings(let v): try c.encode(v)
            }
        }
    }

    static func token(_ claims: [String: JSONClaim], kid: String? = "key-1", key: RSAPrivateKey = TestKeys.google) throws -> String {
        try RS256JWT.sign(claims: claims, keyId: kid, key: key)
    }

    /// A token with a hand-written header and an arbitrary signature.
    static func unsigned(header: String, claims: [String: JSONClaim], signature: [UInt8] = []) -> String {
        Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(PlayJSON.encode(claims)) + "." + Base64.urlEncode(signature)
    }

    @Test func googlesTokenIsAccepted() async throws {
        let world = World()
        let now = world.clock.seconds
        let push = try await world.verifier.verify(authorization: "Bearer " + Self.token(Self.claims(now: now)))
        #expect(push.email == Self.account)
        #expect(push.subject == "113774264463038321964")
        // The short issuer form is Google's too; an audience array naming ours is accepted.
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now, ["iss": .string("accounts.google.com")])))
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now, ["aud": .strings(["x", Self.audience])])))
        #expect(world.fetches == 1)
    }

    @Test func refusedTokens() async throws {
        let world = World()
        let now = world.clock.seconds
        let cases: [(String, GooglePlayError.Code)] = [
            (try Self.token(Self.claims(now: now), key: TestKeys.other), .badSignature),
            (try Self.token(Self.claims(now: now, ["aud": .string("https://attacker.example.com")])), .wrongAudience),
            (try Self.token(Self.claims(now: now, ["aud": nil])), .wrongAudience),
            (try Self.token(Self.claims(now: now, ["email": .string("someone@evil.iam.gserviceaccount.com")])), .wrongAccount),
            (try Self.token(Self.claims(now: now, ["email": nil])), .wrongAccount),
            (try Self.token(Self.claims(now: now, ["iss": .string("https://accounts.google.com.evil")])), .wrongIssuer),
            (try Self.token(Self.claims(now: now, ["iss": nil])), .wrongIssuer),
            (try Self.token(Self.claims(now: now, ["email_verified": .bool(false)])), .emailNotVerified),
            (try Self.token(Self.claims(now: now, ["email_verified": .string("true")])), .emailNotVerified),
            (try Self.token(Self.claims(now: now, ["email_verified": nil])), .emailNotVerified),
            (try Self.token(Self.claims(now: now - 7200, [:])), .expired),
            (try Self.token(Self.claims(now: now, ["iat": .int(now + 600)])), .invalidTimes),
            (try Self.token(Self.claims(now: now, ["exp": nil])), .invalidTimes),
            (Self.unsigned(header: #"{"alg":"none","kid":"key-1","typ":"JWT"}"#, claims: Self.claims(now: now)), .unsupportedAlgorithm),
            (Self.unsigned(header: #"{"alg":"HS256","kid":"key-1","typ":"JWT"}"#, claims: Self.claims(now: now),
                signature: try HMACSHA256.authenticationCode(for: Array("x".utf8), key: Array("secret".utf8))), .unsupportedAlgorithm),
            (Self.unsigned(header: #"{"alg":"RS256","alg":"none","kid":"key-1"}"#, claims: Self.claims(now: now)), .malformedToken),
            (Self.unsigned(header: #"{"alg":"RS256"}"#, claims: Self.claims(now: now)), .unknownKey),
            ("a.b", .malformedToken), ("...", .malformedToken), ("", .malformedToken),
        ]
        for (token, code) in cases {
            await #expect(throws: GooglePlayError(code, "")) { try await world.verifier.verify(token: token) }
        }
        // Within the skew an expired token still passes; beyond it, not.
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now - 3630)))
        await #expect(throws: GooglePlayError(.expired, "")) {
            try await world.verifier.verify(token: Self.token(Self.claims(now: now - 3661)))
        }
    }

    @Test func authorizationHeaderMustBeBearer() async throws {
        let world = World()
        let token = try Self.token(Self.claims(now: world.clock.seconds))
        for header in [nil, "", "Basic abc", "Bearer", token] {
            await #expect(throws: GooglePlayError(.missingToken, "")) { try await world.verifier.verify(authorization: header) }
        }
        _ = try await world.verifier.verify(authorization: "bearer " + token)
    }

    @Test func keysAreCachedForMaxAgeThenRefetched() async throws {
        let world = World(maxAge: "public, max-age=600")
        let now = world.clock.seconds
        for _ in 0..<3 { _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now))) }
        #expect(world.fetches == 1)
        world.clock.advance(seconds: 601)
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: world.clock.seconds)))
        #expect(world.fetches == 2)
    }

    @Test func unknownKidRefetchesAtMostOncePerInterval() async throws {
        let world = World()
        let now = world.clock.seconds
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now)))
        #expect(world.fetches == 1)
        // A token naming a kid Google does not publish: one refetch, then refused without fetching.
        world.clock.advance(seconds: 61)
        for _ in 0..<5 {
            await #expect(throws: GooglePlayError(.unknownKey, "")) {
                try await world.verifier.verify(token: Self.token(Self.claims(now: now + 61), kid: "rotated-away"))
            }
        }
        #expect(world.fetches == 2)
        // Known keys keep working meanwhile.
        _ = try await world.verifier.verify(token: Self.token(Self.claims(now: now + 61)))
        #expect(world.fetches == 2)
    }

    @Test func concurrentVerificationsShareOneFetch() async throws {
        let world = World()
        let token = try Self.token(Self.claims(now: world.clock.seconds))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = try await world.verifier.verify(token: token) } }
            try await group.waitForAll()
        }
        #expect(world.fetches == 1)
    }

    @Test func anOutageKeepsLastKeysForADayAndIsNotHammered() async throws {
        let clock = TestClock()
        let up = Mutex(true)
        let body = PlayJSON.encode(JWKSet(keys: [JWK(publicKey: try TestKeys.google.publicKey, kid: "key-1")]))
        let transport = ScriptedTransport { _ in
            up.withLock { $0 } ? OutboundResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: body) : OutboundResponse(status: 503)
        }
        let verifier = PushVerifier(
            settings: .init(audience: Self.audience, serviceAccountEmail: Self.account), keys: GoogleKeySet(transport: transport, clock: clock),
            clock: clock)
        _ = try await verifier.verify(token: Self.token(Self.claims(now: clock.seconds)))
        up.withLock { $0 = false }
        // Expired cache, Google down: the refetch fails and the keys Google last published still serve.
        clock.advance(seconds: 700)
        _ = try await verifier.verify(token: Self.token(Self.claims(now: clock.seconds)))
        #expect(transport.requests.count == 2)
        // Within the interval nothing is fetched again.
        _ = try await verifier.verify(token: Self.token(Self.claims(now: clock.seconds)))
        #expect(transport.requests.count == 2)
        // A day after expiry they no longer do.
        clock.advance(seconds: 86_400)
        await #expect(throws: GooglePlayError(.keysUnavailable, "")) {
            try await verifier.verify(token: Self.token(Self.claims(now: clock.seconds)))
        }
    }

    @Test func errorCodesAreStableAndDistinct() {
        let raw = GooglePlayError.Code.all.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        #expect(raw.allSatisfy { $0.hasPrefix("GOOGLE_") && $0 == $0.uppercased() })
    }

    @Test func unusableKeySetsAreRefused() async throws {
        let clock = TestClock()
        for (status, body) in [(500, json("{}")), (200, json(#"{"keys":[]}"#)), (200, json("not json")),
            (200, json(#"{"keys":[{"kty":"EC","kid":"key-1"}]}"#))]
        {
            let transport = ScriptedTransport { _ in OutboundResponse(status: status, body: body) }
            let verifier = PushVerifier(
                settings: .init(audience: Self.audience, serviceAccountEmail: Self.account),
                keys: GoogleKeySet(transport: transport, clock: clock), clock: clock)
            await #expect(throws: GooglePlayError(.keysUnavailable, "")) {
                try await verifier.verify(token: Self.token(Self.claims(now: clock.seconds)))
            }
        }
    }
}
