import Foundation

/// Suspends the caller; injected so tests (and the simulator's virtual time) never wait for real.
public protocol Sleeper: Sendable {
    /// Returns after `milliseconds`, or throws when the task is cancelled.
    func sleep(milliseconds: Int64) async throws
}

/// Real waiting with `Task.sleep`.
public struct TaskSleeper: Sleeper {
    public init() {}
    public func sleep(milliseconds: Int64) async throws {
        try await Task.sleep(for: .milliseconds(milliseconds))
    }
}

/// How often and how long to wait before retrying a failed call to a store's API (the App Store
/// Server API client and the Google Play Developer API client share it).
///
/// Exponential backoff with jitter: before retry `n` (1-based) the wait is
/// `min(maxDelay, baseDelay · 2^(n-1))`, of which the upper half is random ("equal jitter"), so
/// many servers that failed together do not come back together, yet each still waits at least half
/// the nominal delay. A 429's `Retry-After` replaces the computed delay (capped at
/// `maxRetryAfterMilliseconds`).
public struct RetryPolicy: Sendable, Hashable {
    /// Calls per request, the first included (1 = no retries).
    public var maxAttempts: Int
    public var baseDelayMilliseconds: Int64
    public var maxDelayMilliseconds: Int64
    /// The longest wait a `Retry-After` can impose; a longer one is cut to this.
    public var maxRetryAfterMilliseconds: Int64

    public init(
        maxAttempts: Int = 5, baseDelayMilliseconds: Int64 = 500, maxDelayMilliseconds: Int64 = 30_000,
        maxRetryAfterMilliseconds: Int64 = 120_000
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelayMilliseconds = max(0, baseDelayMilliseconds)
        self.maxDelayMilliseconds = max(self.baseDelayMilliseconds, maxDelayMilliseconds)
        self.maxRetryAfterMilliseconds = max(0, maxRetryAfterMilliseconds)
    }

    /// No retries at all.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The wait before retry number `retry` (1-based), for a `random` value in `0..<1`.
    public func delayMilliseconds(beforeRetry retry: Int, random: Double) -> Int64 {
        let exponent = min(max(retry - 1, 0), 40)
        let nominal = min(maxDelayMilliseconds, baseDelayMilliseconds.multipliedReportingOverflow(by: 1 << exponent).overflow
            ? maxDelayMilliseconds : baseDelayMilliseconds << exponent)
        let half = nominal / 2
        let jitter = Int64((Double(nominal - half) * min(max(random, 0), 0.999_999)).rounded(.down))
        return half + jitter
    }

    /// The wait a `Retry-After` header asks for (delta-seconds; an HTTP date or garbage is ignored
    /// and the backoff applies), capped at `maxRetryAfterMilliseconds`.
    public func retryAfterMilliseconds(_ header: String?) -> Int64? {
        guard let header, let seconds = Int64(header.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return min(seconds, maxRetryAfterMilliseconds / 1000) * 1000
    }
}

extension RetryPolicy {
    /// The retry step of a client's loop: after failed attempt `attempt` (1-based), waits the
    /// backoff (or `retryAfterMilliseconds`, a 429's `Retry-After`) and answers true when another
    /// attempt should follow; false when the failure is not `retryable`, the attempts are used up,
    /// or the wait was cancelled (the caller then reports the failure).
    public func waitBeforeRetry(
        after attempt: Int, retryable: Bool, retryAfterMilliseconds: Int64?, sleeper: any Sleeper, random: () -> Double
    ) async -> Bool {
        guard retryable, attempt < maxAttempts else { return false }
        do {
            try await sleeper.sleep(milliseconds: retryAfterMilliseconds ?? delayMilliseconds(beforeRetry: attempt, random: random()))
        } catch {
            return false
        }
        return true
    }
}
