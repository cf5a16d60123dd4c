import AppStore
import EntitledCrypto
import Foundation
import HTTPClient
import Synchronization

/// A Google Cloud service-account key file (the JSON Cloud Console downloads): who the server
/// is to Google and the key it signs its assertions with.
public struct ServiceAccountKey: Sendable {
    /// The account (`…@….iam.gserviceaccount.com`): the assertion's `iss`.
    public var clientEmail: String
    /// `private_key_id`, sent as the assertion's `kid` when present.
    public var privateKeyId: String?
    public var privateKey: RSAPrivateKey
    /// Where assertions are exchanged for access tokens (`https://oauth2.googleapis.com/token`).
    public var tokenURI: URL

    public init(clientEmail: String, privateKeyId: String?, privateKey: RSAPrivateKey, tokenURI: URL) {
        self.clientEmail = clientEmail
        self.privateKeyId = privateKeyId
        self.privateKey = privateKey
        self.tokenURI = tokenURI
    }

    /// The largest key file accepted (real ones are about 2.3 KB).
    public static let maximumBytes = 64 * 1024

    /// Reads a key file's JSON; ``GooglePlayError/Code/invalidServiceAccount`` names the member at fault.
    public init(json bytes: [UInt8]) throws(GooglePlayError) {
        let file = try PlayJSON.decode(KeyFile.self, from: bytes, maxBytes: Self.maximumBytes, code: .invalidServiceAccount)
        if let type = file.type, type != "service_account" {
            throw GooglePlayError(.invalidServiceAccount, "$.type is \(type), expected service_account")
        }
        guard let email = file.client_email, !email.isEmpty else { throw GooglePlayError(.invalidServiceAccount, "$.client_email is missing") }
        guard let pem = file.private_key else { throw GooglePlayError(.invalidServiceAccount, "$.private_key is missing") }
        guard let uri = file.token_uri, let url = URL(string: uri), url.scheme == "https" || Self.isLoopback(url) else {
            throw GooglePlayError(.invalidServiceAccount, "$.token_uri is missing or not an https URL")
        }
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey(pem: pem)
        } catch {
            throw GooglePlayError(.invalidServiceAccount, "$.private_key is not an RSA private key")
        }
        self.init(clientEmail: email, privateKeyId: file.private_key_id, privateKey: key, tokenURI: url)
    }

    /// Reads the key file at `path`.
    public init(contentsOf path: String) throws(GooglePlayError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw GooglePlayError(.invalidServiceAccount, "cannot read \(path)")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: Self.maximumBytes + 1)) ?? nil
        try self.init(json: [UInt8](data ?? Data()))
    }

    /// Plain http is allowed only to the local machine (a fake Google in tests and `entitled dev`).
    static func isLoopback(_ url: URL) -> Bool {
        url.scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(url.host ?? "")
    }

    /// The key file's members, as Google names them.
    public struct KeyFile: Sendable, Codable {
        public var type: String?
        public var project_id: String?
        public var private_key_id: String?
        public var private_key: String?
        public var client_email: String?
        public var client_id: String?
        public var token_uri: String?

        public init(
            type: String? = "service_account", project_id: String? = nil, private_key_id: String?, private_key: String?,
            client_email: String?, client_id: String? = nil, token_uri: String?
        ) {
            self.type = type
            self.project_id = project_id
            self.private_key_id = private_key_id
            self.private_key = private_key
            self.client_email = client_email
            self.client_id = client_id
            self.token_uri = token_uri
        }
    }
}

/// The claims of a service account's JWT-bearer assertion (RFC 7523).
public struct ServiceAccountAssertionClaims: Sendable, Hashable, Codable {
    public var iss: String
    public var scope: String
    public var aud: String
    public var iat: Int64
    public var exp: Int64

    public init(iss: String, scope: String, aud: String, iat: Int64, exp: Int64) {
        self.iss = iss
        self.scope = scope
        self.aud = aud
        self.iat = iat
        self.exp = exp
    }
}

/// The token endpoint's answer.
public struct AccessTokenResponse: Sendable, Hashable, Codable {
    public var access_token: String
    /// Seconds the token lives.
    public var expires_in: Int64
    public var token_type: String?

    public init(access_token: String, expires_in: Int64, token_type: String? = "Bearer") {
        self.access_token = access_token
        self.expires_in = expires_in
        self.token_type = token_type
    }
}

/// Access tokens for the Developer API: a signed assertion exchanged at the key file's
/// `token_uri`, cached until ``renewBeforeSeconds`` before it expires. Concurrent callers share
/// one exchange (single flight).
public final class AccessTokenProvider: Sendable {
    /// The scope the Developer API needs.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// RFC 7523's grant type.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google refuses assertions living longer than an hour.
    public static let assertionLifetimeSeconds: Int64 = 3600

    public let account: ServiceAccountKey
    /// A token with less than this left is replaced.
    public let renewBeforeSeconds: Int64
    private let transport: any OutboundHTTP
    private let clock: any EpochClock
    private let timeoutSeconds: Double

    private struct State: Sendable {
        var token: (value: String, expires: Int64)?
        var inFlight: Task<(String, Int64), any Error>?
    }

    private let state = Mutex(State())

    public init(
        account: ServiceAccountKey, transport: any OutboundHTTP, clock: any EpochClock, renewBeforeSeconds: Int64 = 300,
        timeoutSeconds: Double = 30
    ) {
        self.account = account
        self.transport = transport
        self.clock = clock
        self.renewBeforeSeconds = max(0, renewBeforeSeconds)
        self.timeoutSeconds = timeoutSeconds
    }

    /// A valid access token: the cached one, or a fresh one.
    public func accessToken() async throws(GooglePlayError) -> String {
        let now = clock.nowMilliseconds() / 1000
        enum Plan { case cached(String), wait(Task<(String, Int64), any Error>) }
        let plan: Plan = state.withLock { state in
            if let token = state.token, token.expires - renewBeforeSeconds > now { return .cached(token.value) }
            if let task = state.inFlight { return .wait(task) }
            let task = Task { [self] () throws -> (String, Int64) in try await self.exchange() }
            state.inFlight = task
            return .wait(task)
        }
        let task: Task<(String, Int64), any Error>
        switch plan {
        case .cached(let value): return value
        case .wait(let shared): task = shared
        }
        do {
            let (value, expires) = try await task.value
            state.withLock { state in
                if state.inFlight == task {
                    state.inFlight = nil
                    state.token = (value, expires)
                }
            }
            return value
        } catch {
            state.withLock { state in if state.inFlight == task { state.inFlight = nil } }
            throw (error as? GooglePlayError) ?? GooglePlayError(.tokenExchangeFailed, String(describing: error))
        }
    }

    /// Forgets the cached token (after Google answered 401 to it).
    public func invalidate() { state.withLock { $0.token = nil } }

    /// The signed assertion for `now` (seconds since 1970).
    public func assertion(now: Int64) throws(GooglePlayError) -> String {
        let claims = ServiceAccountAssertionClaims(
            iss: account.clientEmail, scope: Self.scope, aud: account.tokenURI.absoluteString, iat: now,
            exp: now + Self.assertionLifetimeSeconds)
        do {
            return try RS256JWT.sign(claims: claims, keyId: account.privateKeyId, key: account.privateKey)
        } catch {
            throw GooglePlayError(.invalidServiceAccount, "the private key cannot sign: \(error.message)")
        }
    }

    private func exchange() async throws(GooglePlayError) -> (String, Int64) {
        let now = clock.nowMilliseconds() / 1000
        let body = "grant_type=" + Self.formEncode(Self.grantType) + "&assertion=" + Self.formEncode(try assertion(now: now))
        let request = OutboundRequest(
            method: "POST", url: account.tokenURI,
            headers: ["Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json", "User-Agent": "entitled"],
            body: Array(body.utf8), timeoutSeconds: timeoutSeconds)
        let response: OutboundResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw GooglePlayError(.network, "token endpoint: \(error.message)")
        }
        guard response.status == 200 else {
            // Google's error body (`{"error":"invalid_grant",…}`) names the cause; keep it short.
            let reason = (try? PlayJSON.decode(TokenError.self, from: response.body, maxBytes: 16 * 1024, code: .tokenExchangeFailed))?.error
            throw GooglePlayError(
                .tokenExchangeFailed, "token endpoint answered \(response.status)\(reason.map { " (\($0.prefix(100)))" } ?? "")",
                status: response.status)
        }
        let answer = try PlayJSON.decode(AccessTokenResponse.self, from: response.body, maxBytes: 64 * 1024, code: .tokenExchangeFailed)
        guard !answer.access_token.isEmpty, answer.access_token.utf8.count <= 8192, answer.expires_in > 0 else {
            throw GooglePlayError(.tokenExchangeFailed, "the token endpoint's answer has no usable token")
        }
        return (answer.access_token, now + min(answer.expires_in, 86_400))
    }

    struct TokenError: Decodable { var error: String? }

    /// `application/x-www-form-urlencoded` encoding of one value.
    static func formEncode(_ value: String) -> String {
        PercentEncoding.encodeUnreserved(value) ?? ""
    }
}
