import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One outbound HTTP request.
public struct OutboundRequest: Sendable, Hashable {
    /// `GET`, `POST`, `PUT` …
    public var method: String
    public var url: URL
    /// Header names as sent.
    public var headers: [String: String]
    public var body: [UInt8]?
    /// The whole exchange must finish within this many seconds.
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

/// A failure below HTTP (connection refused, timeout, TLS, reset); callers may retry it.
public struct OutboundHTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for logs (never contains request headers).
    public var message: String
    /// Whether the request timed out.
    public var timedOut: Bool

    public init(message: String, timedOut: Bool = false) {
        self.message = message
        self.timedOut = timedOut
    }

    public var description: String { message }
}

/// The one way the server calls out over HTTP: the App Store Server API client, and later webhooks.
///
/// A protocol so tests inject a fake transport; production uses ``URLSessionHTTP``.
public protocol OutboundHTTP: Sendable {
    /// Sends `request` and returns the response, whatever its status; throws ``OutboundHTTPError``
    /// when no response arrived.
    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse
}

/// ``OutboundHTTP`` on the toolchain's `URLSession` (FoundationNetworking on Linux, which drives libcurl).
///
/// One session per instance keeps connections alive between requests to the same host (HTTP
/// keep-alive and TLS session reuse). The request runs on URLSession's own delegate queue and the
/// caller's task is suspended on a continuation, so no thread of the cooperative pool blocks.
/// Responses larger than `maxResponseBytes` are refused.
public final class URLSessionHTTP: OutboundHTTP {
    private let session: URLSession
    /// The largest response body accepted.
    public let maxResponseBytes: Int

    /// A client keeping at most `maxConnectionsPerHost` connections per host.
    public init(maxConnectionsPerHost: Int = 8, maxResponseBytes: Int = 8 << 20) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
        self.maxResponseBytes = maxResponseBytes
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeoutSeconds)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let limit = maxResponseBytes
        let session = self.session
        let box = TaskBox()
        let result: Result<OutboundResponse, OutboundHTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        let nsError = error as NSError
                        let timedOut = nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut
                        continuation.resume(
                            returning: .failure(OutboundHTTPError(message: nsError.localizedDescription, timedOut: timedOut)))
                        return
                    }
                    guard let http = response as? HTTPURLResponse else {
                        continuation.resume(returning: .failure(OutboundHTTPError(message: "not an HTTP response")))
                        return
                    }
                    let body = data ?? Data()
                    guard body.count <= limit else {
                        continuation.resume(
                            returning: .failure(OutboundHTTPError(message: "response larger than \(limit) bytes")))
                        return
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name] = value }
                    }
                    continuation.resume(returning: .success(OutboundResponse(status: http.statusCode, headers: headers, body: [UInt8](body))))
                }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
        return try result.get()
    }
}

/// Holds the running task so that cancelling the caller cancels the transfer.
private final class TaskBox: @unchecked Sendable {
    // Guarded by `lock`; @unchecked because URLSessionDataTask is not Sendable on Linux.
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func set(_ task: URLSessionDataTask) {
        lock.lock()
        defer { lock.unlock() }
        self.task = task
        if cancelled { task.cancel() }
    }

    func cancel() {
        lock.lock()
        defer { lock.unlock() }
        cancelled = true
        task?.cancel()
    }
}
