import AppStoreTesting
import EntitledConfig
import EntitledCrypto
@testable import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

@Suite struct DigestTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func sha256KnownAnswers(message: String, digest: String) {
        #expect(Hex.encode(Digests.hash(Array(message.utf8))) == digest)
    }

    @Test func sha256OfAMillionAs() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Hex.encode(Digests.hash(message)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// RFC 4231 test cases 1–4, 6 and 7 (case 5 truncates the output).
    @Test(arguments: [
        ("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", String(repeating: "dd", count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("0102030405060708090a0b0c0d0e0f10111213141516171819", String(repeating: "cd", count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (String(repeating: "aa", count: 131),
         "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (String(repeating: "aa", count: 131),
         "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmacRFC4231(key: String, data: String, mac: String) {
        #expect(Hex.encode(Digests().hmacSHA256(key: Hex.decode(key)!, message: Hex.decode(data)!)) == mac)
    }

    @Test func constantTimeCompare() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(!constantTimeEquals([], [0]))
        #expect(constantTimeEquals([], []))
        // Lengths differing by a multiple of 256 must not compare equal.
        #expect(!constantTimeEquals([UInt8](repeating: 0, count: 256), []))
        #expect(constantTimeSecretEquals("secret-one", "secret-one"))
        #expect(!constantTimeSecretEquals("secret-one", "secret-two"))
    }
}

@Suite struct AuthTests {
    let clock = VirtualClock(1_800_000_000_000)
    var authenticator: Authenticator {
        Authenticator(
            apiKeys: [
                APIKey(name: "reader", secret: "read-secret-0123456789", scopes: [.read]),
                APIKey(name: "backend", secret: "backend-secret-0123456789", scopes: [.read, .write, .admin]),
            ], customerTokens: CustomerTokenSettings(secret: String(repeating: "k", count: 32)), clock: clock)
    }

    func request(_ authorization: String?) -> Request {
        var headers = HTTPHeaders()
        if let authorization { headers.add("Authorization", authorization) }
        return Request(method: .get, path: "/v1/customers/u1", headers: headers)
    }

    @Test func apiKeysAndScopes() throws {
        let reader = try authenticator.authenticate(request("Bearer read-secret-0123456789"))
        #expect(reader == .apiKey(name: "reader", scopes: [.read]))
        #expect(throws: Never.self) { try authenticator.authorize(reader, scope: .read, appUserId: "u1") }
        #expect(throws: AuthError.forbidden("the API key lacks the 'write' scope")) {
            try authenticator.authorize(reader, scope: .write, appUserId: "u1")
        }
        let backend = try authenticator.authenticate(request("bearer backend-secret-0123456789"))
        #expect(throws: Never.self) { try authenticator.authorize(backend, scope: .admin, appUserId: nil) }
    }

    @Test func missingOrUnknownCredentialsAre401WithChallenge() {
        for header in [nil, "Basic abc", "Bearer", "Bearer nope-nope-nope-nope", "Bearer read-secret-012345678"] {
            do {
                _ = try authenticator.authenticate(request(header))
                Issue.record("accepted \(header ?? "nil")")
            } catch {
                #expect(error.status == 401)
                #expect(error.code == "UNAUTHORIZED")
                #expect(error.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
            }
        }
    }

    @Test func customerTokensReachOnlyTheirOwnCustomer() throws {
        let signer = CustomerTokenVerifier(secret: Array(String(repeating: "k", count: 32).utf8), hmac: Digests())
        let token = signer.sign(subject: "u1", expiresAt: 1_800_000_060)
        let principal = try authenticator.authenticate(request("Bearer \(token)"))
        #expect(principal == .customer(appUserId: "u1"))
        #expect(throws: Never.self) { try authenticator.authorize(principal, scope: .write, appUserId: "u1") }
        #expect(throws: AuthError.self) { try authenticator.authorize(principal, scope: .read, appUserId: "u2") }
        #expect(throws: AuthError.self) { try authenticator.authorize(principal, scope: .admin, appUserId: nil) }
        clock.advance(by: 61_000)
        #expect(throws: AuthError.self) { try authenticator.authenticate(request("Bearer \(token)")) }
    }

    @Test func tokenVerificationFailures() throws {
        let secret = Array(String(repeating: "k", count: 32).utf8)
        let verifier = CustomerTokenVerifier(secret: secret, hmac: Digests())
        let now: Int64 = 1_800_000_000_000
        let good = verifier.sign(subject: "u1", expiresAt: 1_800_000_100)
        #expect(try verifier.verify(good, now: now) == "u1")
        let other = CustomerTokenVerifier(secret: Array(String(repeating: "x", count: 32).utf8), hmac: Digests())
        #expect(throws: CustomerTokenVerifier.Failure.signature) {
            try verifier.verify(other.sign(subject: "u1", expiresAt: 1_800_000_100), now: now)
        }
        #expect(throws: CustomerTokenVerifier.Failure.expired) { try verifier.verify(good, now: 1_800_000_100_000) }
        #expect(throws: CustomerTokenVerifier.Failure.malformed) { try verifier.verify("a.b", now: now) }
        // alg none, and a token without exp.
        let parts = good.split(separator: ".")
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + "." + parts[2]
        #expect(throws: CustomerTokenVerifier.Failure.algorithm) { try verifier.verify(none, now: now) }
        let header = String(parts[0])
        let claims = Base64URL.encode(Array(#"{"sub":"u1"}"#.utf8))
        let mac = Digests().hmacSHA256(key: secret, message: Array("\(header).\(claims)".utf8))
        #expect(throws: CustomerTokenVerifier.Failure.missingExpiry) {
            try verifier.verify("\(header).\(claims).\(Base64URL.encode(mac))", now: now)
        }
    }

    @Test func rejectionBudgetRefillsWithTheClock() {
        let budget = RejectionBudget(capacity: 3, refillPerSecond: 0.5, clock: clock)
        #expect(budget.allows("10.0.0.1", .apiKey))
        for _ in 0..<3 { #expect(budget.charge("10.0.0.1", .apiKey)) }
        #expect(!budget.allows("10.0.0.1", .apiKey))
        #expect(!budget.charge("10.0.0.1", .apiKey))
        #expect(budget.allows("10.0.0.2", .apiKey))
        // Each class has its own bucket.
        #expect(RejectionBudget.Credential.allCases.filter { budget.allows("10.0.0.1", $0) } == [
            .customerToken, .appleSignature, .sharedSecret, .clientSignature, .googlePush,
        ])
        clock.advance(by: 1_000)
        #expect(!budget.allows("10.0.0.1", .apiKey))
        clock.advance(by: 1_000)
        #expect(budget.allows("10.0.0.1", .apiKey))
    }

    @Test func rejectionBudgetForgetsAddressesBeyondItsBound() {
        let budget = RejectionBudget(capacity: 2, refillPerSecond: 1, maxAddresses: 10, clock: clock)
        for i in 0..<50 { budget.charge("10.0.\(i).1", .apiKey) }
        budget.charge("10.9.9.9", .apiKey)
        budget.charge("10.9.9.9", .apiKey)
        // Bounded memory: old addresses are dropped rather than growing without limit.
        #expect(budget.allows("10.0.0.1", .apiKey))
    }
}

/// The `Authorization` header's credential, read byte by byte, against the reading by
/// `Character`s it replaced (the reference here): the same for every header of ASCII blanks,
/// scheme letters and credential bytes, and for the table's edge cases.
@Suite struct BearerCredentialTests {
    static func reference(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        var trimmed = parts[1]
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        return String(trimmed)
    }

    @Test(arguments: [
        "Bearer abc", "bearer abc", "BEARER abc", "BeArEr a.b.c", "  Bearer abc", "Bearer   abc \t", "Bearer \t", "Bearer  ",
        "Bearer ", "Bearer", "", " ", "Bearerabc", "Basic abc", "Bearer\tabc", "Bearer a b", "Bearers abc", "Beare abc",
        "Bearer é中😀", "Bearer abc\t\t", "\tBearer abc", "Bearer \u{0}x",
    ])
    func edgeCases(header: String) {
        #expect(Authenticator.bearerCredential(header) == Self.reference(header))
    }

    @Test func generatedHeaders() {
        let pieces = [" ", "\t", "b", "B", "e", "E", "a", "r", "R", "bearer", "Bearer", "x", "é", "."]
        var random = SplitMix64(seed: 91)
        for _ in 0..<5_000 {
            let header = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &random)] }.joined()
            #expect(Authenticator.bearerCredential(header) == Self.reference(header), "\(Array(header.utf8))")
        }
    }
}
