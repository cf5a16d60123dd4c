import AppStore
import EntitledCrypto
import Foundation
import JSONCoding

/// Authenticates a Cloud Pub/Sub push: the `Authorization: Bearer` OIDC token Google signs for a
/// push subscription with authentication enabled.
///
/// Checks, in order: the token's shape; `alg` is RS256 (pinned, so `none` and HS256 never reach a
/// key); the signature against Google's key for `kid`; `iss` is Google's; `aud` is the configured
/// audience; `email` is the configured push service account and `email_verified` is true; `exp`
/// and `iat` against the injected clock with ``Settings/skewSeconds`` of tolerance.
public struct PushVerifier: Sendable {
    /// What a push must carry.
    public struct Settings: Sendable, Hashable {
        /// The push subscription's audience (by default its endpoint URL).
        public var audience: String
        /// The service account the push subscription authenticates as.
        public var serviceAccountEmail: String
        /// Clock difference tolerated on `exp` and `iat`.
        public var skewSeconds: Int64

        public init(audience: String, serviceAccountEmail: String, skewSeconds: Int64 = 60) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.skewSeconds = max(0, min(skewSeconds, 600))
        }
    }

    /// The issuers Google's OIDC tokens carry.
    public static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    /// The checked identity of a push.
    public struct VerifiedPush: Sendable, Hashable {
        public var email: String
        public var audience: String
        public var subject: String?
        /// `iat` and `exp`, seconds since 1970.
        public var issuedAt: Int64
        public var expires: Int64
    }

    public let settings: Settings
    private let keys: GoogleKeySet
    private let clock: any EpochClock

    public init(settings: Settings, keys: GoogleKeySet, clock: any EpochClock) {
        self.settings = settings
        self.keys = keys
        self.clock = clock
    }

    /// Verifies the value of an `Authorization` header (`Bearer <jwt>`, scheme case-insensitive).
    public func verify(authorization: String?) async throws(GooglePlayError) -> VerifiedPush {
        guard let authorization, authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw GooglePlayError(.missingToken, "no Authorization: Bearer header")
        }
        return try await verify(token: String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces))
    }

    /// Verifies a bare token.
    public func verify(token: String) async throws(GooglePlayError) -> VerifiedPush {
        let parsed = try RS256JWT.parse(token)
        guard parsed.headerString("alg") == "RS256" else {
            throw GooglePlayError(.unsupportedAlgorithm, "alg must be RS256")
        }
        if let typ = parsed.headerString("typ"), typ.uppercased() != "JWT" {
            throw GooglePlayError(.malformedToken, "typ must be JWT")
        }
        guard let kid = parsed.headerString("kid"), !kid.isEmpty else { throw GooglePlayError(.unknownKey, "no kid in the header") }
        let key = try await keys.key(for: kid)
        guard key.isValidRS256Signature(parsed.signature, for: parsed.signingInput) else {
            throw GooglePlayError(.badSignature, "the signature does not verify")
        }
        guard let issuer = parsed.claimString("iss"), Self.issuers.contains(issuer) else {
            throw GooglePlayError(.wrongIssuer, "iss is not Google")
        }
        guard audienceMatches(parsed.claims["aud"]) else { throw GooglePlayError(.wrongAudience, "aud is not the configured audience") }
        guard let email = parsed.claimString("email"), email.lowercased() == settings.serviceAccountEmail.lowercased() else {
            throw GooglePlayError(.wrongAccount, "email is not the configured push service account")
        }
        guard case .bool(true)? = parsed.claims["email_verified"] else {
            throw GooglePlayError(.emailNotVerified, "email_verified is not true")
        }
        guard let expires = parsed.claimInteger("exp"), let issuedAt = parsed.claimInteger("iat"), issuedAt <= expires else {
            throw GooglePlayError(.invalidTimes, "exp and iat must be integers with iat <= exp")
        }
        let now = clock.nowMilliseconds() / 1000
        guard now <= expires + settings.skewSeconds else { throw GooglePlayError(.expired, "the token expired") }
        guard issuedAt <= now + settings.skewSeconds else { throw GooglePlayError(.invalidTimes, "iat lies in the future") }
        return VerifiedPush(email: email, audience: settings.audience, subject: parsed.claimString("sub"), issuedAt: issuedAt, expires: expires)
    }

    /// `aud` may be one string or (per RFC 7519) an array; it must name the audience. The
    /// comparison is constant-time: the audience is not secret, but nothing is lost.
    private func audienceMatches(_ value: StrictJSONValue?) -> Bool {
        let expected = Array(settings.audience.utf8)
        switch value {
        case .string(let audience)?: return ConstantTime.equals(Array(audience.utf8), expected)
        case .array(let values)?:
            return values.count <= 8 && values.contains { if case .string(let a) = $0 { ConstantTime.equals(Array(a.utf8), expected) } else { false } }
        default: return false
        }
    }
}
