import Foundation

/// The source of "now" for verification (online validity, cache expiry, OCSP freshness).
///
/// Injected, never read inside the verifier, so tests and `entitled verify --at` control time and a
/// verifier built long ago still sees the current time (the lesson of swift-certificates'
/// deprecated `RFC5280Policy(validationTime:)`).
public protocol VerificationClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMilliseconds() -> Int64
}

/// The wall clock. Use it only where the application is composed.
public struct SystemVerificationClock: VerificationClock {
    /// The wall clock.
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// A clock that always answers the same instant.
public struct FixedVerificationClock: VerificationClock {
    /// The instant, in milliseconds since 1970.
    public var milliseconds: Int64
    /// Always `milliseconds` since 1970.
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    /// Always `seconds` since 1970.
    public init(seconds: Int64) { self.milliseconds = seconds * 1000 }
    public func nowMilliseconds() -> Int64 { milliseconds }
}
