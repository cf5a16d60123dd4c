import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one HTTP request. The default is ``URLSessionTransport``; tests wrap it to go offline.
public protocol HTTPTransport: Sendable {
    /// The response, or a thrown error when the server could not be reached at all.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}

/// `URLSession`'s data task.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession
    public init(session: URLSession = .shared) { self.session = session }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }
}

/// Waits between retries; injected so tests do not wait. Seconds, not `Duration`: the client's
/// platform floor (iOS 15, macOS 12) predates `Duration` and `Clock`.
public protocol Sleeper: Sendable {
    func sleep(seconds: TimeInterval) async throws
}

/// `Task.sleep(nanoseconds:)`.
public struct TaskSleeper: Sleeper {
    public init() {}
    public func sleep(seconds: TimeInterval) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(0, min(seconds, 86_400)) * 1e9))
    }
}

/// How often and how patiently a request is retried after a 5xx or an unreachable server.
/// A 4xx is never retried: the request itself is wrong and would be refused again.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all (1: no retry).
    public var maxAttempts: Int
    /// The wait before the first retry, in seconds; each further retry waits twice as long.
    public var initialDelay: TimeInterval
    /// No wait is longer (seconds), a server's `Retry-After` included.
    public var maxDelay: TimeInterval

    public init(maxAttempts: Int = 4, initialDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 30) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The wait in seconds after failed attempt `attempt` (1-based); `retryAfter` (seconds) from
    /// the server wins when longer.
    public func delay(after attempt: Int, retryAfter: Int? = nil) -> TimeInterval {
        let backoff = initialDelay * Double(1 << min(max(0, attempt - 1), 20))
        let asked = Double(max(0, retryAfter ?? 0))
        return min(max(backoff, asked), maxDelay)
    }
}

/// A failure of a call to the server.
public enum EntitledError: Error, Sendable, Hashable {
    /// The server answered with an RFC 9457 problem: `code` is its stable SCREAMING_SNAKE code
    /// (`INVALID_SIGNATURE`, `STORAGE_UNAVAILABLE`, …; see the server's OpenAPI document).
    case server(status: Int, code: String, detail: String?)
    /// The server could not be reached (after the retries), and no cached answer is usable.
    case offline(String)
    /// The server's answer was not what this client understands.
    case invalidResponse(String)
    /// The token provider failed.
    case credentials(String)
    /// An API-key client was asked about a customer without naming one.
    case missingAppUserId

    /// The server's problem `code`, if it answered with one.
    public var code: String? {
        if case .server(_, let code, _) = self { return code }
        return nil
    }
}

/// The members of a problem+json body the client reads.
struct Problem: Decodable {
    var code: String?
    var detail: String?
    var title: String?
}
