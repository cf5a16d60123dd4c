import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// A customer token's `exp` has a ceiling, so a leaked token cannot live for ever (`exp: 1e308`).
@Suite struct CustomerTokenLifetimeTests {
    static let secret = Array(String(repeating: "k", count: 32).utf8)
    static let now: Int64 = 1_800_000_000_000
    static let nowSeconds = now / 1000

    /// A token with `exp` spelled exactly as given in its JSON claims.
    static func token(exp: String, secret: [UInt8] = secret) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"exp":\#(exp),"sub":"u1"}"#.utf8))
        let mac = Digests().hmacSHA256(key: secret, message: Array("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(Base64URL.encode(mac))"
    }

    @Test(arguments: [
        ("\(nowSeconds + 60)", nil),
        ("\(nowSeconds + 86_400)", nil),  // exactly the default ceiling
        ("\(nowSeconds + 86_401)", CustomerTokenVerifier.Failure.lifetime),
        ("\(nowSeconds + 365 * 86_400)", .lifetime),
        ("1e308", .lifetime),
        ("9223372036854775807", .lifetime),
        ("1.8e18", .lifetime),
        ("\(nowSeconds)", .expired),
        ("-1e308", .expired),
        ("0", .expired),
    ] as [(String, CustomerTokenVerifier.Failure?)])
    func expiryIsBoundedBothWays(exp: String, failure: CustomerTokenVerifier.Failure?) {
        let verifier = CustomerTokenVerifier(secret: Self.secret, hmac: Digests())
        do {
            #expect(try verifier.verify(Self.token(exp: exp), now: Self.now) == "u1")
            #expect(failure == nil, "accepted exp \(exp)")
        } catch {
            #expect(error == failure, "exp \(exp)")
        }
    }

    @Test func theCeilingIsConfigurable() throws {
        let verifier = CustomerTokenVerifier(secret: Self.secret, hmac: Digests(), maxLifetimeSeconds: 3600)
        #expect(try verifier.verify(Self.token(exp: "\(Self.nowSeconds + 3600)"), now: Self.now) == "u1")
        #expect(throws: CustomerTokenVerifier.Failure.lifetime) {
            try verifier.verify(Self.token(exp: "\(Self.nowSeconds + 3601)"), now: Self.now)
        }
    }

    /// Over HTTP: a 401 problem naming the check that failed.
    @Test func aTokenForeverIs401() async throws {
        let harness = Array(APIHarness.tokenSecret.utf8)
        try await APIHarness.run { api in
            let reply = try await api.customer("u1", auth: "Bearer " + Self.token(exp: "1e308", secret: harness))
            #expect(reply.status == 401)
            #expect(reply.code == "TOKEN_LIFETIME_TOO_LONG")
            #expect(reply.headers["content-type"]?.hasPrefix("application/problem+json") == true)
            let day = try await api.customer("u1", auth: "Bearer " + Self.token(exp: "\(APIHarness.start / 1000 + 86_400)", secret: harness))
            #expect(day.status == 200)
        }
    }
}
