import AppStore
import EntitledCrypto
import Foundation
import HTTPClient

/// A client of Apple's App Store Server API for one app.
///
/// Every call is authenticated with a cached ``APITokenIssuer`` token, retried per ``RetryPolicy``
/// (network errors, 429 honouring `Retry-After`, 5xx and Apple's retryable codes), and every signed
/// payload Apple returns is verified with the app's ``SignedDataVerifier`` before it is handed out
/// (``Signed``). Errors are ``ServerAPIError``.
///
/// Calls go to ``Settings/environment`` (Production or Sandbox). Transaction lookups that
/// Production answers with `4040010` (transaction id not found) are repeated on Sandbox when
/// ``Settings/sandboxFallback`` is set: App Review buys in Sandbox against a Production build.
/// The endpoint methods are in `Endpoints.swift`.
public final class AppStoreServerAPIClient: Sendable {
    /// Where and how the client calls.
    public struct Settings: Sendable {
        /// The environment calls go to first: Production or Sandbox. Xcode and LocalTesting make
        /// every call fail with ``ServerAPIError/environmentNotCallable(_:)``.
        public var environment: AppStoreEnvironment
        /// Repeat transaction lookups on Sandbox when Production does not know the transaction.
        public var sandboxFallback: Bool
        /// Which of Apple's host pairs calls go to when ``baseURL`` is nil.
        public var hosts: Hosts
        /// Replaces the scheme, host and port of both environments (tests, the simulator, a proxy);
        /// paths stay Apple's (`/inApps/v1/…`).
        public var baseURL: URL?
        /// Per-request timeout.
        public var timeoutSeconds: Double
        public var retry: RetryPolicy

        public init(
            environment: AppStoreEnvironment = .production, sandboxFallback: Bool = false, hosts: Hosts = .current,
            baseURL: URL? = nil, timeoutSeconds: Double = 30, retry: RetryPolicy = RetryPolicy()
        ) {
            self.environment = environment
            self.sandboxFallback = sandboxFallback
            self.hosts = hosts
            self.baseURL = baseURL
            self.timeoutSeconds = timeoutSeconds
            self.retry = retry
        }
    }

    /// Apple's two pairs of hosts for the API; both answer the same calls.
    public enum Hosts: String, Sendable, CaseIterable {
        /// `api.storekit.apple.com` and `api.storekit-sandbox.apple.com`: the ones Apple recommends.
        case current
        /// `api.storekit.itunes.apple.com` and `api.storekit-sandbox.itunes.apple.com`: the earlier
        /// ones, still served (for a firewall or proxy that only allows them).
        case legacy

        /// The Production host.
        public var productionURL: URL {
            switch self {
            case .current: URL(string: "https://api.storekit.apple.com")!
            case .legacy: URL(string: "https://api.storekit.itunes.apple.com")!
            }
        }

        /// The Sandbox host.
        public var sandboxURL: URL {
            switch self {
            case .current: URL(string: "https://api.storekit-sandbox.apple.com")!
            case .legacy: URL(string: "https://api.storekit-sandbox.itunes.apple.com")!
            }
        }
    }

    public let settings: Settings
    /// The app's bundle identifier.
    public var bundleId: String { tokens.credentials.bundleId }
    let tokens: APITokenIssuer
    let verifier: SignedDataVerifier
    let transport: any OutboundHTTP
    let sleeper: any Sleeper
    let random: @Sendable () -> Double

    /// A client for the app of `credentials`.
    ///
    /// - Parameters:
    ///   - verifier: the app's verifier; it must accept the environments called.
    ///   - transport: ``CurlHTTP`` in production, a fake in tests.
    ///   - clock: times the tokens.
    ///   - sleeper: waits between retries.
    ///   - random: values in `0..<1` for the backoff's jitter.
    public init(
        credentials: ServerAPICredentials, settings: Settings, verifier: SignedDataVerifier, transport: any OutboundHTTP,
        clock: any EpochClock, sleeper: any Sleeper = TaskSleeper(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.settings = settings
        self.tokens = APITokenIssuer(credentials: credentials, clock: clock)
        self.verifier = verifier
        self.transport = transport
        self.sleeper = sleeper
        self.random = random
    }

    /// The scheme, host and port calls to `environment` go to.
    public func baseURL(for environment: AppStoreEnvironment) throws(ServerAPIError) -> URL {
        switch environment {
        case .production: return settings.baseURL ?? settings.hosts.productionURL
        case .sandbox: return settings.baseURL ?? settings.hosts.sandboxURL
        default: throw .environmentNotCallable(environment)
        }
    }

    // MARK: - Requests

    /// Sends one call, retrying as ``Settings/retry`` allows, and returns a 2xx response.
    func send(
        _ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
        contentType: String = "application/json", environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> OutboundResponse {
        let url = try url(path, query: query, environment: environment ?? settings.environment)
        let policy = settings.retry
        var attempt = 1
        while true {
            let token: String
            do {
                token = try tokens.token()
            } catch {
                throw .invalidRequest(message: "the private key cannot sign: \(error.message)")
            }
            var headers = ["Authorization": "Bearer " + token, "Accept": "application/json", "User-Agent": "entitled"]
            if body != nil { headers["Content-Type"] = contentType }
            let request = OutboundRequest(method: method, url: url, headers: headers, body: body, timeoutSeconds: settings.timeoutSeconds)
            let failure: ServerAPIError
            var retryAfter: Int64?
            do {
                let response = try await transport.send(request)
                if (200..<300).contains(response.status) { return response }
                // Never followed (the transport does not): the bearer token stays with the configured origin.
                if (300..<400).contains(response.status) {
                    throw ServerAPIError.invalidResponse(message: "redirect (\(response.status)) not followed")
                }
                if response.status == 401 {
                    tokens.invalidate()
                    throw ServerAPIError.unauthorized(bundleId: tokens.credentials.bundleId, keyId: tokens.credentials.keyId)
                }
                failure = Self.appleError(response)
                if response.status == 429 { retryAfter = policy.retryAfterMilliseconds(response.headers["retry-after"]) }
            } catch let error as OutboundHTTPError {
                // An oversized answer is not a passing fault: asking again would only fetch it again.
                if error.kind == .tooLarge { throw ServerAPIError.invalidResponse(message: error.message) }
                failure = .network(message: error.message)
            } catch let error as ServerAPIError {
                throw error
            } catch {
                failure = .network(message: String(describing: error))
            }
            guard
                await policy.waitBeforeRetry(
                    after: attempt, retryable: failure.isRetryable, retryAfterMilliseconds: retryAfter, sleeper: sleeper, random: random)
            else { throw failure }
            attempt += 1
        }
    }

    /// Apple's error body as a typed error (the status alone when the body is not Apple's JSON).
    static func appleError(_ response: OutboundResponse) -> ServerAPIError {
        let body = try? AppStoreJSON.decode(APIErrorResponse.self, from: Data(response.body))
        return .apple(status: response.status, code: body?.errorCode, message: body?.errorMessage.map { String($0.prefix(500)) })
    }

    func url(_ path: String, query: [(String, String)], environment: AppStoreEnvironment) throws(ServerAPIError) -> URL {
        let base = try baseURL(for: environment)
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else {
            throw .invalidRequest(message: "unusable base URL \(base)")
        }
        let prefix = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        components.percentEncodedPath = prefix + path
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components.url else { throw .invalidRequest(message: "cannot build a URL for \(path)") }
        return url
    }

    /// `value` as one percent-encoded path segment; ids longer than 256 bytes or empty are refused.
    static func segment(_ value: String, name: String) throws(ServerAPIError) -> String {
        guard !value.isEmpty, value.utf8.count <= 256 else { throw .invalidRequest(message: "\(name) must be 1 to 256 bytes") }
        guard let encoded = PercentEncoding.encodeUnreserved(value) else {
            throw .invalidRequest(message: "\(name) is not encodable")
        }
        return encoded
    }

    // MARK: - Bodies

    func decode<T: Decodable>(_ type: T.Type, from response: OutboundResponse) throws(ServerAPIError) -> T {
        do {
            return try AppStoreJSON.decode(type, from: Data(response.body))
        } catch {
            throw .invalidResponse(message: error.description)
        }
    }

    func encode<T: Encodable>(_ value: T) throws(ServerAPIError) -> [UInt8] {
        do {
            return [UInt8](try AppStoreJSON.encode(value))
        } catch {
            throw .invalidRequest(message: "cannot encode the body: \(error)")
        }
    }

    /// Verifies one signed payload from Apple's answer.
    func verified<P: VerifiablePayload>(_ jws: String, as type: P.Type = P.self) async throws(ServerAPIError) -> Signed<P> {
        do {
            let verified = try await verifier.verifyPayload(jws, as: type)
            return Signed(jws: jws, payload: verified.value, unknownMembers: verified.unknownMembers)
        } catch {
            throw .verification(error)
        }
    }

    func verified<P: VerifiablePayload>(_ list: [String]?, as type: P.Type = P.self) async throws(ServerAPIError) -> [Signed<P>] {
        var out: [Signed<P>] = []
        for jws in list ?? [] { out.append(try await verified(jws, as: type)) }
        return out
    }

    /// Runs a transaction lookup on `environment`, or when nil on the configured environment and then,
    /// if that is Production answering "transaction id not found", on Sandbox.
    func lookup<T>(
        _ environment: AppStoreEnvironment?, _ call: (AppStoreEnvironment) async throws(ServerAPIError) -> T
    ) async throws(ServerAPIError) -> T {
        if let environment { return try await call(environment) }
        do {
            return try await call(settings.environment)
        } catch {
            guard settings.sandboxFallback, settings.environment == .production, error.appleErrorCode == .transactionIdNotFound
            else { throw error }
            return try await call(.sandbox)
        }
    }
}

/// A signed payload from Apple with its verified, decoded content.
public struct Signed<Payload: Sendable>: Sendable {
    /// The JWS as Apple sent it (store or forward this, never log it whole).
    public var jws: String
    /// The verified payload.
    public var payload: Payload
    /// The members of its JSON this build does not know, where the payload type reports them
    /// (``VerifiedPayload/unknownMembers``).
    public var unknownMembers: [UnknownMember]

    public init(jws: String, payload: Payload, unknownMembers: [UnknownMember] = []) {
        self.jws = jws
        self.payload = payload
        self.unknownMembers = unknownMembers
    }
}
