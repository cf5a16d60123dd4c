import AppStore
import EntitledCrypto
import Foundation
import Synchronization

/// The identity an app uses at the App Store Server API: its bundle id and an in-app purchase key
/// (App Store Connect › Users and Access › Integrations › In-App Purchase).
public struct ServerAPICredentials: Sendable {
    /// The app's bundle identifier (`bid` claim).
    public var bundleId: String
    /// The key id (`kid` header), e.g. `ABC123DEFG`.
    public var keyId: String
    /// The issuer id (`iss` claim), a UUID.
    public var issuerId: String
    /// The `.p8` key (PKCS#8 PEM, P-256).
    public var privateKey: P256PrivateKey

    public init(bundleId: String, keyId: String, issuerId: String, privateKey: P256PrivateKey) {
        self.bundleId = bundleId
        self.keyId = keyId
        self.issuerId = issuerId
        self.privateKey = privateKey
    }
}

/// Issues the bearer JWT Apple requires and reuses it until shortly before it expires.
///
/// Header `{"alg":"ES256","kid":…,"typ":"JWT"}`; claims `iss`, `iat`, `exp`, `aud` =
/// `appstoreconnect-v1`, `bid`. Apple refuses tokens living longer than 60 minutes, so the lifetime
/// is capped there; a token is renewed once less than `renewBeforeSeconds` of it remains, so a
/// request never leaves with a token about to expire in flight.
public final class APITokenIssuer: Sendable {
    /// Apple's limit on `exp - iat`.
    public static let maximumLifetimeSeconds: Int64 = 3600

    public let credentials: ServerAPICredentials
    /// `exp - iat` of each token, at most 3600.
    public let lifetimeSeconds: Int64
    /// A token with less than this left is replaced.
    public let renewBeforeSeconds: Int64
    private let clock: any EpochClock
    private let cached = Mutex<(token: String, expires: Int64)?>(nil)

    /// Tokens for `credentials`, timed by `clock`.
    public init(
        credentials: ServerAPICredentials, clock: any EpochClock, lifetimeSeconds: Int64 = 1800, renewBeforeSeconds: Int64 = 300
    ) {
        self.credentials = credentials
        self.clock = clock
        self.lifetimeSeconds = min(max(lifetimeSeconds, 60), Self.maximumLifetimeSeconds)
        self.renewBeforeSeconds = min(max(renewBeforeSeconds, 0), self.lifetimeSeconds / 2)
    }

    /// A valid token: the cached one, or a fresh one when that is missing or about to expire.
    public func token() throws(CryptoError) -> String {
        let now = clock.nowMilliseconds() / 1000
        if let current = cached.withLock({ $0 }), current.expires - renewBeforeSeconds > now { return current.token }
        let fresh = try Self.sign(credentials: credentials, issuedAt: now, expires: now + lifetimeSeconds)
        cached.withLock { $0 = (fresh, now + lifetimeSeconds) }
        return fresh
    }

    /// Forgets the cached token (after Apple answered 401 to it, say).
    public func invalidate() { cached.withLock { $0 = nil } }

    /// A compact JWS with Apple's header and claims, signed ES256 with the credentials' key.
    public static func sign(credentials: ServerAPICredentials, issuedAt: Int64, expires: Int64) throws(CryptoError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header: Data
        let claims: Data
        do {
            header = try encoder.encode(Header(alg: "ES256", kid: credentials.keyId, typ: "JWT"))
            claims = try encoder.encode(
                Claims(iss: credentials.issuerId, iat: issuedAt, exp: expires, aud: "appstoreconnect-v1", bid: credentials.bundleId))
        } catch {
            throw CryptoError(.invalidInput, "cannot encode the token: \(error)")
        }
        let signingInput = Base64.urlEncode(header) + "." + Base64.urlEncode(claims)
        let signature = try credentials.privateKey.es256Signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }

    struct Header: Encodable {
        var alg: String
        var kid: String
        var typ: String
    }

    struct Claims: Encodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }
}
