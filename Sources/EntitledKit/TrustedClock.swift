import Foundation

/// A clock that the device's wall clock cannot move: elapsed time since an origin (a process
/// start, a boot). Readings taken under different ``origin`` values are not comparable.
public protocol MonotonicClock: Sendable {
    /// Time elapsed since the origin.
    func elapsed() -> Duration
    /// Names the origin: a reading is only compared with readings of the same origin.
    var origin: String { get }
}

/// The device's wall clock, which its owner may set to anything.
public protocol WallClock: Sendable {
    func now() -> Date
}

/// `ContinuousClock` (it keeps counting while the device sleeps) from this process's start.
public struct SystemMonotonicClock: MonotonicClock {
    private let start = ContinuousClock.now
    public let origin = UUID().uuidString
    public init() {}
    public func elapsed() -> Duration { start.duration(to: .now) }
}

/// `Date()`.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// Where an answer's `serverTime` sits on the local clocks when it arrived.
struct TimeAnchor: Codable, Sendable, Hashable {
    var serverTime: Date
    /// The monotonic reading (seconds) at arrival, and its clock's origin.
    var monotonicSeconds: Double
    var origin: String
    /// The wall clock at arrival: only used after a relaunch, when the monotonic reading is lost.
    var wallTime: Date

    init(serverTime: Date, monotonic: any MonotonicClock, wall: any WallClock) {
        self.serverTime = serverTime
        monotonicSeconds = monotonic.elapsed().seconds
        origin = monotonic.origin
        wallTime = wall.now()
    }

    /// The server's time now, estimated without trusting the wall clock where possible.
    ///
    /// Same origin: `serverTime` plus the monotonic time elapsed since, so moving the wall clock
    /// changes nothing. Another origin (the app was relaunched): the wall clock corrected by the
    /// offset seen at arrival, but never earlier than `floor` (the latest trusted time this device
    /// has already reached), so a clock set back cannot rewind past what was already observed.
    func now(monotonic: any MonotonicClock, wall: any WallClock, floor: Date?) -> Date {
        if monotonic.origin == origin {
            let elapsed = monotonic.elapsed().seconds - monotonicSeconds
            return serverTime.addingTimeInterval(Swift.max(0, elapsed))
        }
        let estimate = wall.now().addingTimeInterval(serverTime.timeIntervalSince(wallTime))
        return [estimate, floor ?? serverTime, serverTime].max()!
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
