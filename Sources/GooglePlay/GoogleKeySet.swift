import AppStore
import EntitledCrypto
import Foundation
import HTTPClient
import Synchronization

/// Google's OAuth 2.0 signing keys (a JWK Set), fetched from `certsURL` through the outbound
/// client and cached by `kid`.
///
/// The cache lives as long as the answer's `Cache-Control: max-age` says (an hour when it says
/// nothing, a day at most). A `kid` the cache does not know makes it fetch again, at most once per
/// ``minimumRefetchMilliseconds`` (so forged tokens with random key ids cannot make the server
/// hammer Google); concurrent callers share one fetch.
public final class GoogleKeySet: Sendable {
    public static let defaultCertsURL = URL(string: "https://www.googleapis.com/oauth2/v3/certs")!
    /// The largest key set accepted.
    public static let maximumBytes = 64 * 1024
    /// The most keys kept from one answer (Google publishes two or three).
    public static let maximumKeys = 16

    public let certsURL: URL
    /// The shortest time between two fetches caused by unknown key ids.
    public let minimumRefetchMilliseconds: Int64
    private let transport: any OutboundHTTP
    private let clock: any EpochClock
    private let timeoutSeconds: Double

    private struct Snapshot: Sendable {
        var keys: [String: RSAPublicKey]
        var fetchedAt: Int64
        var expiresAt: Int64
    }

    private struct State: Sendable {
        var snapshot: Snapshot?
        var lastAttempt: Int64?
        var inFlight: Task<Snapshot, any Error>?
    }

    private let state = Mutex(State())

    public init(
        certsURL: URL = GoogleKeySet.defaultCertsURL, transport: any OutboundHTTP, clock: any EpochClock,
        minimumRefetchMilliseconds: Int64 = 60_000, timeoutSeconds: Double = 10
    ) {
        self.certsURL = certsURL
        self.transport = transport
        self.clock = clock
        self.minimumRefetchMilliseconds = minimumRefetchMilliseconds
        self.timeoutSeconds = timeoutSeconds
    }

    /// The key for `kid`: from the cache while it is fresh, otherwise after a (shared) fetch.
    ///
    /// - Throws: ``GooglePlayError/Code/unknownKey`` when Google does not publish `kid`,
    ///   ``GooglePlayError/Code/keysUnavailable`` when the set cannot be fetched.
    public func key(for kid: String) async throws(GooglePlayError) -> RSAPublicKey {
        let now = clock.nowMilliseconds()
        enum Plan { case use(RSAPublicKey), refuse(GooglePlayError), fetch(Task<Snapshot, any Error>) }
        let plan: Plan = state.withLock { state in
            if let snapshot = state.snapshot, snapshot.expiresAt > now, let key = snapshot.keys[kid] { return .use(key) }
            if let task = state.inFlight { return .fetch(task) }
            if let last = state.lastAttempt, now - last < minimumRefetchMilliseconds {
                // Fetched (or failed to) a moment ago: an unknown kid stays unknown until the interval
                // has passed; an expired set keeps serving what Google last published for a day.
                guard let snapshot = state.snapshot else { return .refuse(GooglePlayError(.keysUnavailable, "Google's keys are unavailable")) }
                if let key = snapshot.keys[kid], now - snapshot.expiresAt < 86_400_000 { return .use(key) }
                return .refuse(GooglePlayError(.unknownKey, "no Google key with this kid"))
            }
            let task = Task { [self] () throws -> Snapshot in try await self.fetch() }
            state.inFlight = task
            state.lastAttempt = now
            return .fetch(task)
        }
        switch plan {
        case .use(let key): return key
        case .refuse(let error): throw error
        case .fetch(let task):
            let snapshot: Snapshot
            do {
                snapshot = try await task.value
                state.withLock { state in
                    if state.snapshot.map({ $0.fetchedAt <= snapshot.fetchedAt }) ?? true { state.snapshot = snapshot }
                    if state.inFlight == task { state.inFlight = nil }
                }
            } catch {
                let stale = state.withLock { state -> RSAPublicKey? in
                    if state.inFlight == task { state.inFlight = nil }
                    // A day past expiry at most: Google rotates keys over weeks, so that is still its key.
                    guard let snapshot = state.snapshot, now - snapshot.expiresAt < 86_400_000 else { return nil }
                    return snapshot.keys[kid]
                }
                if let stale { return stale }
                throw (error as? GooglePlayError) ?? GooglePlayError(.keysUnavailable, String(describing: error))
            }
            guard let key = snapshot.keys[kid] else { throw GooglePlayError(.unknownKey, "no Google key with this kid") }
            return key
        }
    }

    private func fetch() async throws(GooglePlayError) -> Snapshot {
        let response: OutboundResponse
        do {
            response = try await transport.send(
                OutboundRequest(method: "GET", url: certsURL, headers: ["Accept": "application/json"], timeoutSeconds: timeoutSeconds))
        } catch {
            throw GooglePlayError(.keysUnavailable, "fetching \(certsURL.absoluteString): \(error.message)")
        }
        guard response.status == 200 else {
            throw GooglePlayError(.keysUnavailable, "\(certsURL.absoluteString) answered \(response.status)", status: response.status)
        }
        let keys = try Self.parse(response.body)
        let now = clock.nowMilliseconds()
        let maxAge = Self.maxAgeSeconds(response.headers["cache-control"]) ?? 3600
        return Snapshot(keys: keys, fetchedAt: now, expiresAt: now + min(maxAge, 86_400) * 1000)
    }

    /// The RS256 signing keys of a JWK Set document by `kid`; entries that are not RSA signing keys
    /// are skipped, a document with none is refused.
    public static func parse(_ body: [UInt8]) throws(GooglePlayError) -> [String: RSAPublicKey] {
        let set = try PlayJSON.decode(JWKSet.self, from: body, maxBytes: maximumBytes, code: .keysUnavailable)
        var keys: [String: RSAPublicKey] = [:]
        for jwk in set.keys.prefix(maximumKeys) {
            guard jwk.kty == "RSA", jwk.alg == nil || jwk.alg == "RS256", jwk.use == nil || jwk.use == "sig",
                let kid = jwk.kid, !kid.isEmpty, kid.utf8.count <= 256,
                let n = jwk.n.flatMap({ Base64.urlDecode($0) }), let e = jwk.e.flatMap({ Base64.urlDecode($0) }),
                let key = try? RSAPublicKey(modulus: n, exponent: e)
            else { continue }
            keys[kid] = key
        }
        guard !keys.isEmpty else { throw GooglePlayError(.keysUnavailable, "the key set holds no RS256 key") }
        return keys
    }

    /// `max-age` of a `Cache-Control` header, in seconds.
    static func maxAgeSeconds(_ header: String?) -> Int64? {
        guard let header else { return nil }
        for directive in header.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int64(parts[1]), seconds >= 0 { return seconds }
        }
        return nil
    }
}

/// A JSON Web Key Set (RFC 7517), as Google publishes it.
public struct JWKSet: Sendable, Hashable, Codable {
    public var keys: [JWK]
    public init(keys: [JWK]) { self.keys = keys }
}

/// One JSON Web Key; only the RSA public members are read.
public struct JWK: Sendable, Hashable, Codable {
    public var kty: String
    public var kid: String?
    public var alg: String?
    public var use: String?
    /// The modulus, base64url.
    public var n: String?
    /// The public exponent, base64url.
    public var e: String?

    public init(kty: String = "RSA", kid: String?, alg: String? = "RS256", use: String? = "sig", n: String?, e: String?) {
        self.kty = kty
        self.kid = kid
        self.alg = alg
        self.use = use
        self.n = n
        self.e = e
    }

    /// The JWK of an RSA public key.
    public init(publicKey: RSAPublicKey, kid: String) {
        self.init(kid: kid, n: Base64.urlEncode(publicKey.modulus), e: Base64.urlEncode(publicKey.exponent))
    }
}
