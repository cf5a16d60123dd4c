import Foundation

/// The one source of "now" for the whole system: the verifier (online validity, cache expiry,
/// OCSP freshness), the server (token expiry, rejection budgets, purges, evaluation time) and the
/// simulator's virtual time.
///
/// Injected, never read inside the components that use it, so tests, `entitled dev` and
/// `entitled verify --at` control time, and a verifier built long ago still sees the current time
/// (the lesson of swift-certificates' deprecated `RFC5280Policy(validationTime:)`). Only the
/// composition root picks ``SystemClock``.
public protocol EpochClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMilliseconds() -> Int64
}

/// The wall clock. Use it only where the application is composed.
public struct SystemClock: EpochClock {
    /// The wall clock.
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// A clock that always answers the same instant.
public struct FixedClock: EpochClock {
    /// The instant, in milliseconds since 1970.
    public var milliseconds: Int64
    /// Always `milliseconds` since 1970.
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    /// Always `seconds` since 1970.
    public init(seconds: Int64) { self.milliseconds = seconds * 1000 }
    public func nowMilliseconds() -> Int64 { milliseconds }
}
