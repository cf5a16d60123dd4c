import AppStore
import EntitledConfig
import EntitledCrypto
import Foundation
import HTTPServer

/// Who is calling the customer or admin API.
public enum Principal: Sendable, Equatable {
    /// A configured API key.
    case apiKey(name: String, scopes: Set<APIKey.Scope>)
    /// A per-customer token: may read and post only `appUserId`.
    case customer(appUserId: String)
}

/// The API's auth failures, as problem+json.
public struct AuthError: HTTPResponseError, Equatable {
    /// The row of ``ProblemCode``: `UNAUTHORIZED` or `FORBIDDEN`, or for a customer token the
    /// check it failed (`TOKEN_…`).
    public var problem: ProblemCode
    public var detail: String?
    /// Which rejection budget a 401 spends (see ``RejectionBudget``).
    public var credential: RejectionBudget.Credential = .apiKey

    public var status: Int { problem.status }
    public var code: String { problem.rawValue }

    public var headers: HTTPHeaders {
        problem.status == 401 ? ["WWW-Authenticate": #"Bearer realm="entitled""#] : [:]
    }

    /// 401: no credentials, or unknown / invalid ones.
    public static func unauthorized(_ detail: String) -> AuthError {
        AuthError(problem: .unauthorized, detail: detail)
    }

    /// 403: valid credentials without the needed scope or customer.
    public static func forbidden(_ detail: String) -> AuthError {
        AuthError(problem: .forbidden, detail: detail)
    }
}

/// Checks `Authorization: Bearer …` against the configured API keys and customer tokens.
///
/// API keys are compared as SHA-256 digests in constant time against *every* key, without an early
/// exit, so neither the position of a mismatch nor which key matched shows in the timing.
public struct Authenticator: Sendable {
    struct Key: Sendable {
        var name: String
        var digest: [UInt8]
        var scopes: Set<APIKey.Scope>
    }

    let keys: [Key]
    let tokens: CustomerTokenVerifier?
    let clock: any EpochClock

    public init(
        apiKeys: [APIKey], customerTokens: CustomerTokenSettings?, hmac: any HMACSHA256Computing = Digests(),
        clock: any EpochClock
    ) {
        keys = apiKeys.map { Key(name: $0.name, digest: Digests.hash(Array($0.secret.utf8)), scopes: $0.scopes) }
        tokens = customerTokens.map {
            CustomerTokenVerifier(secret: Array($0.secret.utf8), hmac: hmac, maxLifetimeSeconds: $0.maxLifetimeSeconds)
        }
        self.clock = clock
    }

    /// The principal behind the request's bearer credentials.
    public func authenticate(_ request: Request) throws(AuthError) -> Principal {
        guard let header = request.headers["Authorization"] else { throw .unauthorized("missing bearer credentials") }
        guard let credential = Self.bearerCredential(header) else {
            throw .unauthorized("expected 'Authorization: Bearer <secret>'")
        }
        if let principal = matchKey(credential) { return principal }
        if let tokens, credential.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            do {
                let appUserId = try tokens.verify(credential, now: clock.nowMilliseconds())
                return .customer(appUserId: appUserId)
            } catch {
                var failure = AuthError(problem: error.problem, detail: error.detail(maxLifetimeSeconds: tokens.maxLifetimeSeconds))
                failure.credential = .customerToken
                throw failure
            }
        }
        throw .unauthorized("unknown API key")
    }

    /// Compares against every key; no early exit.
    func matchKey(_ credential: String) -> Principal? {
        guard let found = Self.firstMatch(credential, in: keys, digest: { $0.digest }) else { return nil }
        return .apiKey(name: keys[found].name, scopes: keys[found].scopes)
    }

    /// The credential of an `Authorization` header value of the form `Bearer <credential>`, without
    /// surrounding blanks; nil for any other form.
    ///
    /// Read as UTF-8 bytes: the scheme and the blanks are ASCII, and splitting into `Character`s
    /// (grapheme breaking) cost more than the rest of the key check on every request.
    static func bearerCredential(_ header: String) -> String? {
        let (space, tab) = (UInt8(ascii: " "), UInt8(ascii: "\t"))
        var header = header
        return header.withUTF8 { bytes -> String? in
            // The scheme: after any leading spaces, up to the next space.
            var index = 0
            while index < bytes.count, bytes[index] == space { index += 1 }
            let schemeStart = index
            while index < bytes.count, bytes[index] != space { index += 1 }
            // One space separates; the credential is what follows it, without blanks around it.
            guard index + 1 < bytes.count, index - schemeStart == 6,
                zip(bytes[schemeStart..<index], "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 })
            else { return nil }
            var (start, end) = (index + 1, bytes.count)
            while start < end, bytes[start] == space || bytes[start] == tab { start += 1 }
            while end > start, bytes[end - 1] == space || bytes[end - 1] == tab { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// The index of the first of `candidates` whose digest equals the SHA-256 of `credential`,
    /// compared in constant time against every one without an early exit (which matched, or where a
    /// mismatch lies, does not show in the time taken).
    static func firstMatch<Candidate>(_ credential: String, in candidates: [Candidate], digest: (Candidate) -> [UInt8]) -> Int? {
        let hashed = Digests.hash(Array(credential.utf8))
        var found: Int = -1
        for (index, candidate) in candidates.enumerated() {
            let equal = constantTimeEquals(hashed, digest(candidate))
            // Branch-free select: keeps the first match without stopping the loop.
            let take = equal && found < 0
            found = take ? index : found
        }
        return found >= 0 ? found : nil
    }

    /// Requires `scope` (API key) or, for a customer token, that the request is about its own customer
    /// and the scope is `read` or `write`.
    public func authorize(_ principal: Principal, scope: APIKey.Scope, appUserId: String?) throws(AuthError) {
        switch principal {
        case .apiKey(_, let scopes):
            // The console's read-only key reads what a `read` key reads; `admin` may use the console.
            let granted = scopes.contains(scope) || (scope == .read && scopes.contains(.console))
                || (scope == .console && scopes.contains(.admin))
            guard granted else { throw .forbidden("the API key lacks the '\(scope.rawValue)' scope") }
        case .customer(let subject):
            // Bytes, not String ==: that one calls NFC and NFD spellings of one name equal.
            guard scope != .admin, let appUserId else {
                throw .forbidden("a customer token may only access its own customer's routes: use an API key")
            }
            guard AppUserID.same(appUserId, subject) else {
                throw AuthError(
                    problem: .tokenCustomerMismatch,
                    detail: "the token's sub is another customer than the one asked for: a customer token may only access its own customer")
            }
        }
    }
}

/// Verifies HS256 JWTs: `{"alg":"HS256"}` header, `sub` (the appUserId), `exp` (seconds) required.
public struct CustomerTokenVerifier: Sendable {
    public enum Failure: Error, Equatable {
        case malformed, algorithm, signature, expired
        /// No `sub`.
        case missingClaim
        /// No `exp` (or not a number).
        case missingExpiry
        /// `sub` is not a valid appUserId (see ``AppUserID``).
        case invalidSubject
        /// `exp` is not a finite number, or lies more than `maxLifetimeSeconds` beyond now.
        case lifetime
    }

    let secret: [UInt8]
    let hmac: any HMACSHA256Computing
    let maxLifetimeSeconds: Int

    public init(
        secret: [UInt8], hmac: any HMACSHA256Computing,
        maxLifetimeSeconds: Int = CustomerTokenSettings.defaultMaxLifetimeSeconds
    ) {
        self.secret = secret
        self.hmac = hmac
        self.maxLifetimeSeconds = maxLifetimeSeconds
    }

    /// The token's `sub` when the signature is valid, `sub` is a valid appUserId, and `exp` is after
    /// `now` (epoch ms) but at most `maxLifetimeSeconds` beyond it.
    public func verify(_ token: String, now: Int64) throws(Failure) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let payload = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any]
        else { throw .malformed }
        guard header["alg"] as? String == "HS256" else { throw .algorithm }
        let expected = hmac.hmacSHA256(key: secret, message: Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8))
        guard constantTimeEquals(expected, signature) else { throw .signature }
        guard let subject = payload["sub"] as? String, !subject.isEmpty else { throw .missingClaim }
        guard let exp = payload["exp"] as? NSNumber else { throw .missingExpiry }
        // Compared in seconds as Double: exp may be anything JSON can spell (1e308, fractions);
        // Int conversions of it could trap.
        let seconds = exp.doubleValue
        let nowSeconds = Double(now) / 1000
        guard seconds.isFinite, seconds <= nowSeconds + Double(maxLifetimeSeconds) else { throw .lifetime }
        guard seconds > nowSeconds else { throw .expired }
        guard AppUserID.isValid(subject) else { throw .invalidSubject }
        return subject
    }

    /// Signs a token (for tests, tooling and backends that mint tokens for their apps).
    public func sign(subject: String, expiresAt seconds: Int64) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = ["sub": subject, "exp": seconds] as [String: Any]
        let payloadData = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data()
        let payload = Base64URL.encode(Array(payloadData))
        let mac = hmac.hmacSHA256(key: secret, message: Array("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Base64URL.encode(mac))"
    }
}

/// base64url without padding (RFC 4648 §5), as JWS uses it.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String { Base64.urlEncode(bytes) }

    /// Unpadded base64url only (a `=` makes it invalid, as in JWS).
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        guard !text.utf8.contains(0x3D) else { return nil }
        return Base64.urlDecode(text)
    }
}

extension CustomerTokenVerifier.Failure {
    /// The problem a token refused for this reason is answered with: one code per check, so that
    /// whoever mints the tokens can tell which one to fix.
    var problem: ProblemCode {
        switch self {
        case .malformed, .algorithm, .missingClaim, .invalidSubject: .tokenMalformed
        case .signature: .tokenSignatureInvalid
        case .missingExpiry: .tokenExpiryMissing
        case .lifetime: .tokenLifetimeTooLong
        case .expired: .tokenExpired
        }
    }

    /// The problem's detail: what failed and what to do (never the token or the secret).
    func detail(maxLifetimeSeconds: Int) -> String {
        switch self {
        case .malformed: "not a JWT: three base64url parts, the first two JSON objects"
        case .algorithm: "the token's header must say \"alg\":\"HS256\""
        case .missingClaim: "the token has no sub claim (the customer's appUserId)"
        case .invalidSubject: "the token's sub is not a valid appUserId"
        case .signature: "the signature does not match: sign with customerTokens.secret (HS256)"
        case .missingExpiry: "the token has no exp claim (seconds since 1970 when it expires)"
        case .lifetime:
            "exp lies more than customerTokens.maxLifetimeSeconds (\(maxLifetimeSeconds)) from now, or is not a finite number: mint shorter-lived tokens"
        case .expired: "the token has expired (exp is past): mint a new one"
        }
    }
}
