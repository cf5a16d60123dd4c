import AppStore
import Foundation
import HTTPClient

/// A client of the Google Play Developer API (`androidpublisher` v3) for the purchase resources.
///
/// Every call carries an access token from ``AccessTokenProvider``; network failures, 408, 429
/// (honouring `Retry-After`) and 5xx are retried per ``RetryPolicy`` (the one the App Store client
/// uses); a 401 drops the cached token and is retried once with a fresh one; redirects are never
/// followed. Answers are decoded with ``PlayJSON`` (bounded, strict). The endpoint methods are in
/// `DeveloperAPIEndpoints.swift`.
public final class DeveloperAPIClient: Sendable {
    public static let defaultBaseURL = URL(string: "https://androidpublisher.googleapis.com")!

    /// Where and how the client calls.
    public struct Settings: Sendable {
        /// Scheme, host and port; the paths are Google's (`/androidpublisher/v3/…`).
        public var baseURL: URL
        public var timeoutSeconds: Double
        public var retry: RetryPolicy

        public init(baseURL: URL = DeveloperAPIClient.defaultBaseURL, timeoutSeconds: Double = 30, retry: RetryPolicy = RetryPolicy()) {
            self.baseURL = baseURL
            self.timeoutSeconds = timeoutSeconds
            self.retry = retry
        }
    }

    public let settings: Settings
    let tokens: AccessTokenProvider
    let transport: any OutboundHTTP
    let sleeper: any Sleeper
    let random: @Sendable () -> Double

    /// - Parameters:
    ///   - tokens: the service account's access tokens.
    ///   - transport: ``CurlHTTP`` in production, a fake in tests.
    ///   - sleeper: waits between retries.
    ///   - random: values in `0..<1` for the backoff's jitter.
    public init(
        settings: Settings = Settings(), tokens: AccessTokenProvider, transport: any OutboundHTTP, sleeper: any Sleeper = TaskSleeper(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.settings = settings
        self.tokens = tokens
        self.transport = transport
        self.sleeper = sleeper
        self.random = random
    }

    /// Sends one call, retrying as ``Settings/retry`` allows, and returns a 2xx response.
    func send(_ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil) async throws(GooglePlayError)
        -> OutboundResponse
    {
        let url = try url(path, query: query)
        let policy = settings.retry
        var attempt = 1
        var refreshedAfter401 = false
        while true {
            let failure: GooglePlayError
            var retryAfter: Int64?
            do {
                let token = try await tokens.accessToken()
                var headers = ["Authorization": "Bearer " + token, "Accept": "application/json", "User-Agent": "entitled"]
                if body != nil { headers["Content-Type"] = "application/json" }
                let response = try await transport.send(
                    OutboundRequest(method: method, url: url, headers: headers, body: body ?? (method == "POST" ? [] : nil),
                        timeoutSeconds: settings.timeoutSeconds))
                if (200..<300).contains(response.status) { return response }
                // Never followed: the bearer token stays with the configured origin.
                if (300..<400).contains(response.status) {
                    throw GooglePlayError(.malformedResponse, "redirect (\(response.status)) not followed", status: response.status)
                }
                if response.status == 401, !refreshedAfter401 {
                    // An access token Google no longer accepts (revoked, clock skew): one fresh try.
                    tokens.invalidate()
                    refreshedAfter401 = true
                    continue
                }
                failure = Self.googleError(response)
                if response.status == 429 { retryAfter = policy.retryAfterMilliseconds(response.headers["retry-after"]) }
            } catch let error as OutboundHTTPError {
                if error.kind == .tooLarge { throw GooglePlayError(.malformedResponse, error.message) }
                failure = GooglePlayError(.network, error.message)
            } catch let error as GooglePlayError {
                failure = error
            } catch {
                failure = GooglePlayError(.network, String(describing: error))
            }
            guard
                await policy.waitBeforeRetry(
                    after: attempt, retryable: failure.isRetryable, retryAfterMilliseconds: retryAfter, sleeper: sleeper, random: random)
            else { throw failure }
            attempt += 1
        }
    }

    /// Google's error body (`{"error": {"code", "message", "status"}}`) as a typed error.
    static func googleError(_ response: OutboundResponse) -> GooglePlayError {
        let body = try? PlayJSON.decode(ErrorBody.self, from: response.body, maxBytes: 64 * 1024, code: .malformedResponse)
        let message = body?.error?.message.map { String($0.prefix(300)) } ?? "no error body"
        let status = body?.error?.status.map { "\($0): " } ?? ""
        return GooglePlayError(.apiError, status + message, status: response.status)
    }

    /// Google's error envelope.
    public struct ErrorBody: Sendable, Codable {
        public var error: Detail?
        public struct Detail: Sendable, Codable {
            public var code: Int?
            public var message: String?
            public var status: String?
            public init(code: Int?, message: String?, status: String?) {
                self.code = code
                self.message = message
                self.status = status
            }
        }
        public init(error: Detail?) { self.error = error }
    }

    func url(_ path: String, query: [(String, String)]) throws(GooglePlayError) -> URL {
        guard var components = URLComponents(url: settings.baseURL, resolvingAgainstBaseURL: false) else {
            throw GooglePlayError(.invalidRequest, "unusable base URL")
        }
        let prefix = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        components.percentEncodedPath = prefix + path
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components.url else { throw GooglePlayError(.invalidRequest, "cannot build a URL") }
        return url
    }

    /// `value` as one percent-encoded path segment; empty or oversized values are refused.
    static func segment(_ value: String, name: String, maxBytes: Int = 256) throws(GooglePlayError) -> String {
        guard !value.isEmpty, value.utf8.count <= maxBytes else {
            throw GooglePlayError(.invalidRequest, "\(name) must be 1 to \(maxBytes) bytes")
        }
        guard let encoded = PercentEncoding.encodeUnreserved(value) else {
            throw GooglePlayError(.invalidRequest, "\(name) is not encodable")
        }
        return encoded
    }

    /// `/androidpublisher/v3/applications/{packageName}/purchases`.
    static func purchasesPath(_ packageName: String) throws(GooglePlayError) -> String {
        "/androidpublisher/v3/applications/" + (try segment(packageName, name: "packageName")) + "/purchases"
    }
}
