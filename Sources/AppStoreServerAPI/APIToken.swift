import AppStore
import EntitledCrypto
import Foundation
import Synchronization

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
        try ES256JWT.sign(
            claims: Claims(iss: credentials.issuerId, iat: issuedAt, exp: expires, aud: "appstoreconnect-v1", bid: credentials.bundleId),
            keyId: credentials.keyId, key: credentials.privateKey)
    }

    struct Claims: Encodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }
}
