import AppStore
import Foundation
import Synchronization

/// The simulator's notion of now, in epoch milliseconds. It never reads the wall clock: it starts
/// where it is told and moves only when advanced.
///
/// Thread-safe. Conforms to `EpochClock`, so a verifier or a server (in tests and `entitled dev`) reads it directly.
public final class VirtualClock: EpochClock {
    private let now: Mutex<Int64>

    /// Starts at `milliseconds` since 1970.
    public init(milliseconds: Int64) { now = Mutex(milliseconds) }

    /// The current virtual time.
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }

    /// Moves to `milliseconds`; moving backwards is ignored (virtual time is monotonic).
    public func set(milliseconds: Int64) { now.withLock { $0 = max($0, milliseconds) } }

    /// Moves forward by `milliseconds` (negative amounts are ignored).
    public func advance(milliseconds: Int64) { now.withLock { $0 += max(0, milliseconds) } }
}

/// An ISO 8601 duration (`P1M`, `P1Y`, `P3D`, `P1W`, `PT1H`, `P1DT12H`), added on the UTC Gregorian calendar
/// (so `P1M` from Jan 31 lands on the last day of February, as the App Store renews).
public struct ISODuration: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Years.
    public var years = 0
    /// Months.
    public var months = 0
    /// Days.
    public var days = 0
    /// Hours.
    public var hours = 0
    /// Minutes.
    public var minutes = 0
    /// Seconds.
    public var seconds = 0
    /// The text it was parsed from (or a canonical rendering).
    public let text: String

    /// Parses `text`; nil when it is not a duration of the supported form.
    public init?(_ text: String) {
        self.text = text
        var rest = Substring(text.uppercased())
        guard rest.first == "P" else { return nil }
        rest = rest.dropFirst()
        var inTime = false
        var number = ""
        var sawComponent = false
        for character in rest {
            if character == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                continue
            }
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            // Components beyond a million (years, or seconds) mean nothing here and would overflow the arithmetic.
            guard let value = Int(number), value <= Self.componentLimit else { return nil }
            number = ""
            sawComponent = true
            switch (character, inTime) {
            case ("Y", false): years += value
            case ("M", false): months += value
            case ("W", false): days += 7 * value
            case ("D", false): days += value
            case ("H", true): hours += value
            case ("M", true): minutes += value
            case ("S", true): seconds += value
            default: return nil
            }
            guard years <= Self.componentLimit, months <= Self.componentLimit, days <= 7 * Self.componentLimit,
                hours <= Self.componentLimit, minutes <= Self.componentLimit, seconds <= Self.componentLimit
            else { return nil }
        }
        guard number.isEmpty, sawComponent else { return nil }
    }

    /// The largest value of one component (a million): far beyond any subscription period, small enough
    /// that sums and calendar arithmetic cannot overflow.
    static let componentLimit = 1_000_000

    /// Decodes from its text form.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = ISODuration(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 duration: \(text)"))
        }
        self = value
    }

    /// Encodes as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    public var description: String { text }

    public static func == (lhs: ISODuration, rhs: ISODuration) -> Bool {
        (lhs.years, lhs.months, lhs.days, lhs.hours, lhs.minutes, lhs.seconds)
            == (rhs.years, rhs.months, rhs.days, rhs.hours, rhs.minutes, rhs.seconds)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(years)
        hasher.combine(months)
        hasher.combine(days)
        hasher.combine(hours * 3600 + minutes * 60 + seconds)
    }

    /// This duration `times` times over (e.g. three periods of `P1M` is `P3M`).
    public func multiplied(by times: Int) -> ISODuration {
        var copy = self
        copy.years *= times
        copy.months *= times
        copy.days *= times
        copy.hours *= times
        copy.minutes *= times
        copy.seconds *= times
        return copy
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// `milliseconds` plus this duration, calendar-aware for years, months and days.
    public func added(to milliseconds: Int64) -> Int64 {
        let fraction = ((milliseconds % 1000) + 1000) % 1000
        let date = Date(timeIntervalSince1970: TimeInterval((milliseconds - fraction) / 1000))
        var components = DateComponents()
        components.year = years
        components.month = months
        components.day = days
        components.hour = hours
        components.minute = minutes
        components.second = seconds
        guard let result = Self.calendar.date(byAdding: components, to: date) else { return milliseconds }
        // Saturate rather than trap: a result beyond ±292 million years is not a time (callers bound it).
        let seconds = result.timeIntervalSince1970.rounded()
        guard seconds.magnitude < Double(Int64.max / 1000 - 1) else { return seconds < 0 ? Int64.min : Int64.max }
        return Int64(seconds) * 1000 + fraction
    }
}

/// Milliseconds in common units.
public enum Milliseconds {
    /// One second in milliseconds.
    public static let second: Int64 = 1000
    /// One minute in milliseconds.
    public static let minute: Int64 = 60 * second
    /// One hour in milliseconds.
    public static let hour: Int64 = 60 * minute
    /// One day (24 hours) in milliseconds.
    public static let day: Int64 = 24 * hour
}
