import Foundation

/// One outbound HTTP request.
public struct OutboundRequest: Sendable, Hashable {
    /// `GET`, `POST`, `PUT` …
    public var method: String
    public var url: URL
    /// Header names as sent.
    public var headers: [String: String]
    public var body: [UInt8]?
    /// The whole exchange, connection to last byte, must finish within this many seconds.
    public var timeoutSeconds: Double

    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil, timeoutSeconds: Double = 30) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutSeconds = timeoutSeconds
    }
}

/// One outbound HTTP response.
public struct OutboundResponse: Sendable, Hashable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }
}

/// No usable response: connection refused, timeout, TLS, reset, a body over the cap; callers may
/// retry it.
public struct OutboundHTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, for callers that treat them differently.
    public enum Kind: String, Sendable, Hashable {
        /// No connection, a reset, TLS, a malformed answer.
        case network
        /// The request's deadline passed before the response was complete.
        case timedOut
        /// The response (headers and body) passed the client's byte cap; the transfer was ended.
        case tooLarge
        /// The caller's task was cancelled.
        case cancelled
        /// The request could not be sent as given (a bad URL, an unsupported scheme, a bad header).
        case invalidRequest
    }

    /// What went wrong, for logs (never contains request headers).
    public var message: String
    public var kind: Kind

    public init(message: String, kind: Kind = .network) {
        self.message = message
        self.kind = kind
    }

    /// Whether the request timed out.
    public var timedOut: Bool { kind == .timedOut }

    public var description: String { message }
}

/// The one way the server calls out over HTTP: webhooks, the App Store Server API client, OCSP, and
/// every later integration.
///
/// A protocol so tests inject a fake transport; production uses ``CurlHTTP``. Implementations
/// never follow redirects: a 3xx is returned as the response, for the caller to refuse.
public protocol OutboundHTTP: Sendable {
    /// Sends `request` and returns the response, whatever its status; throws ``OutboundHTTPError``
    /// when no response arrived.
    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse
}
