import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// One appUserId has one spelling, so one person is never two customers. Ids that are not NFC, not valid
/// percent-encoded UTF-8, or hold control characters are refused (400 `INVALID_APP_USER_ID`),
/// and a customer token's `sub` obeys the same rule and is compared byte for byte.
@Suite struct AppUserIdentityTests {
    static let t0 = APIHarness.start
    static let signer = CustomerTokenVerifier(secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests())

    static func token(_ subject: String) -> String {
        "Bearer " + signer.sign(subject: subject, expiresAt: t0 / 1000 + 60)
    }

    /// Path segments as sent, and whether they name a valid id.
    @Test(arguments: [
        ("u1", true),
        ("jos%C3%A9", true),  // "josé", NFC
        ("jose%CC%81", false),  // "josé", NFD: the same name in another spelling
        ("%E1%84%80%E1%85%A1", false),  // Hangul jamo: NFC composes them to U+AC00
        ("%EA%B0%80", true),  // U+AC00
        ("%ff", false),  // not UTF-8 (was U+FFFD)
        ("%fe", false),  // not UTF-8 (was the same U+FFFD)
        ("%EF%BF%BD", true),  // an explicit U+FFFD is a character like any other
        ("%C0%AF", false),  // overlong "/"
        ("%ED%A0%80", false),  // a UTF-16 surrogate
        ("abc%00def", false),  // NUL (was truncated to "abc")
        ("abc%0Adef", false),  // LF
        ("%7F", false),  // DEL
        ("%C2%85", false),  // NEL, a C1 control
        ("admin%E2%80%AEgpj.exe", false),  // U+202E, a bidi override: reads as another id
        ("a%E2%81%A6b", false),  // U+2066, a bidi isolate
        ("a%E2%80%8Bb", false),  // U+200B, a zero-width space
        ("%EF%BB%BFu1", false),  // U+FEFF, a byte-order mark
        ("a%E2%80%A8b", false),  // U+2028, a line separator
        ("ab%", false),  // a lone %
        ("ab%2", false),  // a short escape
        ("ab%zz", false),  // not hex
        ("a%2Fb", true),  // "a/b": an encoded slash is part of the id
        ("a%20b", true),
        (String(repeating: "%C3%A9", count: 128), true),  // 128 scalars
        (String(repeating: "%C3%A9", count: 129), false),
        (String(repeating: "x", count: 129), false),
    ])
    func pathIds(segment: String, valid: Bool) async throws {
        try await APIHarness.run { api in
            for (method, path) in [
                ("GET", "/v1/customers/\(segment)"), ("GET", "/v1/customers/\(segment)/history"),
                ("POST", "/v1/customers/\(segment)/transactions"),
            ] {
                let reply = try await api.send(method, path, auth: APIHarness.writer, json: method == "POST" ? "{}" : nil)
                if valid {
                    #expect(reply.code != "INVALID_APP_USER_ID", "\(method) \(path)")
                    if method == "GET" && !path.hasSuffix("/history") {
                        #expect(reply.status == 200)
                        let answered = (reply.json["appUserId"] as? String).map { Array($0.utf8) }
                        #expect(answered == PercentDecoding.decode(segment).map { Array($0.utf8) })
                    }
                } else {
                    #expect(reply.status == 400, "\(method) \(path)")
                    #expect(reply.code == "INVALID_APP_USER_ID", "\(method) \(path)")
                }
            }
        }
    }

    /// The reproduction: a token for "josé" (NFC) read and wrote customer "jose\u{301}" (NFD).
    @Test func anNFCTokenCannotReachTheNFDSpelling() async throws {
        try await APIHarness.run { api in
            let nfc = Self.token("jos\u{E9}")
            #expect(try await api.customer("jos%C3%A9", auth: nfc).status == 200)
            let nfd = try await api.customer("jose%CC%81", auth: nfc)
            #expect(nfd.status == 400)
            #expect(nfd.code == "INVALID_APP_USER_ID")
            let write = try await api.send("POST", "/v1/customers/jose%CC%81/transactions", auth: nfc, json: "{}")
            #expect(write.status == 400)
            // A token whose sub is not a valid id is no token.
            for subject in ["jose\u{301}", "abc\u{0}def", "a\nb", String(repeating: "x", count: 129)] {
                #expect(try await api.customer("u1", auth: Self.token(subject)).status == 401, "\(subject.debugDescription)")
            }
        }
    }

    /// Swift's `==` calls the two spellings equal; the token check must not.
    @Test func authorizationComparesBytes() {
        let authenticator = Authenticator(
            apiKeys: [], customerTokens: CustomerTokenSettings(secret: APIHarness.tokenSecret), clock: VirtualClock(Self.t0))
        #expect(throws: AuthError.self) {
            try authenticator.authorize(.customer(appUserId: "jos\u{E9}"), scope: .read, appUserId: "jose\u{301}")
        }
        #expect(throws: Never.self) {
            try authenticator.authorize(.customer(appUserId: "jos\u{E9}"), scope: .read, appUserId: "jos\u{E9}")
        }
    }

    @Test(arguments: [
        ("plain", "plain"), ("a%20b", "a b"), ("%C3%A9", "\u{E9}"), ("%00", "\u{0}"), ("a%2fb", "a/b"),
    ])
    func percentDecoding(raw: String, decoded: String) {
        #expect(PercentDecoding.decode(raw) == decoded)
    }

    @Test(arguments: ["%ff", "%fe%ff", "%", "%4", "%g0", "\u{E9}", "%C0%80"])
    func percentDecodingRefuses(raw: String) {
        #expect(PercentDecoding.decode(raw) == nil)
    }
}
