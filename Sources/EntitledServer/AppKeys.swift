import AppStore
import EntitledConfig
import EntitledCrypto
import Foundation
import HTTPServer

/// What the server needs for app keys (docs/app-keys.md): the configured keys as digests, the
/// minter of customer tokens, and the rate limits.
///
/// An app key is accepted on `POST /v1/customers/anonymous` only; it is never a ``Principal``, so
/// it reads and changes nothing else.
struct AppKeyGate: Sendable {
    struct Key: Sendable {
        var bundleId: String
        var name: String
        var digest: [UInt8]
    }

    /// The prefix of every anonymous customer's id; nothing else the server mints starts with it.
    static let anonymousPrefix = "$anon:"

    let keys: [Key]
    /// Signs (and checks) customer tokens with `customerTokens.secret`; nil without `customerTokens`.
    let tokens: CustomerTokenVerifier?
    /// The lifetime of the tokens the server mints: the longest the verifier accepts.
    let lifetimeSeconds: Int
    /// Whether any app allows logging in without a backend-minted token.
    let allowKeyLogin: Bool
    let perKey: RateLimiter
    let perAddress: RateLimiter

    init(configuration: Configuration, hmac: any HMACSHA256Computing, clock: any EpochClock) {
        keys = configuration.apps.flatMap { app in
            app.appKeys.map { Key(bundleId: app.bundleId, name: $0.name, digest: Digests.hash(Array($0.key.utf8))) }
        }
        let settings = configuration.customerTokens
        tokens = settings.map {
            CustomerTokenVerifier(secret: Array($0.secret.utf8), hmac: hmac, maxLifetimeSeconds: $0.maxLifetimeSeconds)
        }
        lifetimeSeconds = settings?.maxLifetimeSeconds ?? CustomerTokenSettings.defaultMaxLifetimeSeconds
        allowKeyLogin = configuration.apps.contains { $0.allowAppKeyLogin }
        perKey = RateLimiter(configuration.appKeyRateLimits.perKey, clock: clock)
        perAddress = RateLimiter(configuration.appKeyRateLimits.perAddress, clock: clock)
    }

    /// The configured key `credential` is, compared as SHA-256 digests in constant time against
    /// every key without an early exit (which key matched, or where a mismatch lies, does not show).
    func match(_ credential: String) -> Key? {
        Authenticator.firstMatch(credential, in: keys, digest: { $0.digest }).map { keys[$0] }
    }

    /// A fresh anonymous id: the prefix and 128 random bits in hex.
    static func newAnonymousId() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return anonymousPrefix + Hex.encode(bytes)
    }

    static func isAnonymous(_ appUserId: String) -> Bool { appUserId.utf8.starts(with: anonymousPrefix.utf8) }

    /// A token for `appUserId` lasting ``lifetimeSeconds`` from `now` (ms), with its expiry (ms).
    func mint(_ appUserId: String, now: Int64) -> (token: String, expiresAt: Int64)? {
        guard let tokens else { return nil }
        let expires = now / 1000 + Int64(lifetimeSeconds)
        return (tokens.sign(subject: appUserId, expiresAt: expires), expires * 1000)
    }

    /// Spends one token of `bucket` for `key`; the 429 when it is empty.
    static func spend(_ bucket: RateLimiter, _ key: String, _ code: ProblemCode) throws(HTTPError) {
        guard let retryAfter = bucket.take(key) else { return }
        let detail = code == .appKeyRateLimited ? "this app key is over its rate" : "too many requests from this address"
        throw HTTPError(code, "\(detail); retry after \(retryAfter) s", headers: ["Retry-After": "\(retryAfter)"])
    }

    /// The bearer credential of `request`, trimmed; nil without one.
    static func bearer(_ request: Request) -> String? {
        request.headers["Authorization"].flatMap(Authenticator.bearerCredential)
    }
}

/// A token the server minted, as its endpoints answer it.
struct MintedTokenBody: Encodable {
    var appUserId: String
    var appAccountToken: String?
    var token: String
    var expiresAt: String
}
