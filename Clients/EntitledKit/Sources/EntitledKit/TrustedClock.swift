import Foundation

/// A clock that the device's wall clock cannot move: elapsed time since an origin (a process
/// start, a boot). Readings taken under different ``origin`` values are not comparable.
public protocol MonotonicClock: Sendable {
    /// Seconds elapsed since the origin.
    func elapsed() -> TimeInterval
    /// Names the origin: a reading is only compared with readings of the same origin.
    var origin: String { get }
}

/// The device's wall clock, which its owner may set to anything.
public protocol WallClock: Sendable {
    func now() -> Date
}

/// Time since the device booted, sleep included, named by the boot session: a relaunched app
/// (same boot) still compares its readings with the ones it stored, so the device's wall clock
/// plays no part until the next reboot. Where the boot session cannot be read, the origin is this
/// process (a relaunch then falls back to the corrected wall clock, see the docs).
public struct SystemMonotonicClock: MonotonicClock {
    public let origin: String

    public init() { origin = Self.bootSession().map { "boot-" + $0 } ?? "process-" + UUID().uuidString }

    public func elapsed() -> TimeInterval {
        #if canImport(Darwin)
            // CLOCK_MONOTONIC counts while asleep on Darwin (CLOCK_UPTIME_RAW would not).
            return Double(clock_gettime_nsec_np(CLOCK_MONOTONIC)) / 1e9
        #elseif os(Linux)
            var now = timespec()
            guard clock_gettime(CLOCK_BOOTTIME, &now) == 0 else { return ProcessInfo.processInfo.systemUptime }
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        #else
            return ProcessInfo.processInfo.systemUptime
        #endif
    }

    /// The kernel's id for this boot: `kern.bootsessionuuid` (Darwin), `boot_id` (Linux).
    static func bootSession() -> String? {
        #if canImport(Darwin)
            var size = 0
            guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, size > 1 else { return nil }
            var bytes = [CChar](repeating: 0, count: size)
            guard sysctlbyname("kern.bootsessionuuid", &bytes, &size, nil, 0) == 0 else { return nil }
            return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #elseif os(Linux)
            let id = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            return id?.trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty
        #else
            return nil
        #endif
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
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
        monotonicSeconds = monotonic.elapsed()
        origin = monotonic.origin
        wallTime = wall.now()
    }

    /// The server's time now, estimated without trusting the wall clock where possible.
    ///
    /// Same origin: `serverTime` plus the monotonic time elapsed since, so moving the wall clock
    /// changes nothing. Another origin (the device rebooted): the wall clock corrected by the
    /// offset seen at arrival, but never earlier than `floor` (the latest trusted time this device
    /// has already reached), so a clock set back cannot rewind past what was already observed.
    func now(monotonic: any MonotonicClock, wall: any WallClock, floor: Date?) -> Date {
        if monotonic.origin == origin {
            let elapsed = monotonic.elapsed() - monotonicSeconds
            return serverTime.addingTimeInterval(Swift.max(0, elapsed))
        }
        let estimate = wall.now().addingTimeInterval(serverTime.timeIntervalSince(wallTime))
        return [estimate, floor ?? serverTime, serverTime].max()!
    }
}
