/// Epoch-millisecond arithmetic in UTC, without Foundation.
///
/// Every instant in this module is an `Int64` count of milliseconds since 1970-01-01T00:00:00Z,
/// the unit Apple's signed payloads use (`purchaseDate`, `expiresDate`, `signedDate`, …).
public enum Time {
    /// One second in milliseconds.
    public static let second: Int64 = 1_000
    /// One minute in milliseconds.
    public static let minute: Int64 = 60 * second
    /// One hour in milliseconds.
    public static let hour: Int64 = 60 * minute
    /// One day (86,400 s; UTC has no daylight saving) in milliseconds.
    public static let day: Int64 = 24 * hour

    /// The instant of a UTC calendar date and time.
    ///
    /// Out-of-range months and days are not normalised; pass real dates. Saturates at
    /// `Int64.min` / `Int64.max` for dates beyond the epoch-millisecond range.
    public static func millis(
        year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0
    ) -> Int64 {
        let days = daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
        return days.times(Time.day).plus(Int64(hour).times(Time.hour)).plus(Int64(minute).times(Time.minute))
            .plus(Int64(second).times(Time.second))
    }

    /// The UTC calendar date (year, month 1–12, day 1–31) of an instant.
    public static func civilDate(of millis: Int64) -> (year: Int64, month: Int64, day: Int64) {
        civilFromDays(floorDiv(millis, Time.day))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    ///
    /// Counts in 400-year eras (146,097 days each) whose years start on 1 March, so the leap day
    /// falls at the end of the year and month lengths follow a fixed 153-days-per-5-months pattern.
    /// Inputs are clamped to ±``civilLimit`` (far beyond any epoch-millisecond instant), so absurd
    /// dates give an absurd answer, never a trap.
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = year.clamped(civilLimit), month = month.clamped(civilLimit), day = day.clamped(civilLimit)
        let marchYear = month <= 2 ? year - 1 : year
        let era = floorDiv(marchYear, 400)
        let yearOfEra = marchYear - era * 400  // 0...399
        let marchMonth = (month + 9) % 12  // March = 0 … February = 11 (for months 1…12)
        let dayOfYear = (153 * marchMonth + 2) / 5 + day - 1  // 0...365
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        // 719,468 days separate 0000-03-01 from 1970-01-01.
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (inverse of ``daysFromCivil(year:month:day:)``).
    /// `days` is clamped to ±``civilLimit``; every day of an `Int64` millisecond instant is far inside.
    public static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days.clamped(civilLimit) + 719_468
        let era = floorDiv(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * marchMonth + 2) / 5 + 1
        let month = marchMonth < 10 ? marchMonth + 3 : marchMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// Whether a Gregorian year has 29 February.
    public static func isLeapYear(_ year: Int64) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// The number of days in a month of a year.
    public static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Division rounding toward negative infinity (instants before 1970 stay on the right day).
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// The bound of the civil-date functions' inputs: 2^40 (about 3 billion years in days).
    /// Their arithmetic stays far from overflow inside it, and every day of an `Int64` millisecond
    /// instant (±1.07 × 10^11) lies inside.
    public static let civilLimit: Int64 = 1 << 40
}

// Saturating arithmetic: every sum, difference and product of instants, durations and amounts in
// this module goes through these, so a fact with absurd values (an expiry at `Int64.max`, a
// quantity of `Int.max`) gives a wrong answer for its own customer instead of trapping the process.
// A saturated result stays on the right side of every comparison with an in-range value.
extension FixedWidthInteger where Self: SignedInteger {
    /// `self + other`, clamped to the type's range.
    @inline(__always) func plus(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, clamped to the type's range.
    @inline(__always) func minus(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }

    /// `self * other`, clamped to the type's range.
    @inline(__always) func times(_ other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : product
    }

    /// `self` limited to `-limit...limit`.
    @inline(__always) func clamped(_ limit: Self) -> Self { Swift.min(Swift.max(self, -limit), limit) }
}

/// An ISO 8601 duration such as `P1M`, `P1Y`, `P7D`, `P3M`, `P1W` or `P1DT12H`.
///
/// Policy gives the length of non-renewing subscriptions this way. Years and months are calendar
/// arithmetic in UTC (31 January + `P1M` is the last day of February); weeks, days and the time
/// part are fixed lengths. Fractions and negative components are rejected.
public struct ISODuration: Hashable, Sendable, Codable, CustomStringConvertible {
    public var years: Int
    public var months: Int
    public var weeks: Int
    public var days: Int
    public var hours: Int
    public var minutes: Int
    public var seconds: Int

    /// A duration from its components (all non-negative).
    public init(years: Int = 0, months: Int = 0, weeks: Int = 0, days: Int = 0,
                hours: Int = 0, minutes: Int = 0, seconds: Int = 0) {
        self.years = years
        self.months = months
        self.weeks = weeks
        self.days = days
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// Parses `PnYnMnWnDTnHnMnS` (each part optional, at least one present, in this order).
    ///
    /// - Returns: nil when the text is not such a duration.
    public init?(parsing text: String) {
        var result = ISODuration()
        let bytes = Array(text.utf8)
        guard bytes.count >= 3, bytes[0] == UInt8(ascii: "P") else { return nil }
        var index = 1
        var inTime = false
        var seenAny = false
        // Designators must appear in order; `rank` rejects `P1D1Y` and repeats.
        var lastRank = -1
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "T") {
                guard !inTime else { return nil }
                inTime = true
                index += 1
                guard index < bytes.count else { return nil }  // "P1DT" has no time part
                continue
            }
            var value = 0
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let (product, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = product.addingReportingOverflow(Int(bytes[index] - UInt8(ascii: "0")))
                guard !o1, !o2, sum <= 1_000_000 else { return nil }
                value = sum
                digits += 1
                index += 1
            }
            guard digits > 0, index < bytes.count else { return nil }
            let designator = bytes[index]
            index += 1
            let rank: Int
            switch (inTime, designator) {
            case (false, UInt8(ascii: "Y")): rank = 0; result.years = value
            case (false, UInt8(ascii: "M")): rank = 1; result.months = value
            case (false, UInt8(ascii: "W")): rank = 2; result.weeks = value
            case (false, UInt8(ascii: "D")): rank = 3; result.days = value
            case (true, UInt8(ascii: "H")): rank = 4; result.hours = value
            case (true, UInt8(ascii: "M")): rank = 5; result.minutes = value
            case (true, UInt8(ascii: "S")): rank = 6; result.seconds = value
            default: return nil
            }
            guard rank > lastRank else { return nil }
            lastRank = rank
            seenAny = true
        }
        guard seenAny else { return nil }
        self = result
    }

    /// The canonical text, e.g. `P1M` or `P1DT12H`.
    public var description: String {
        var text = "P"
        if years > 0 { text += "\(years)Y" }
        if months > 0 { text += "\(months)M" }
        if weeks > 0 { text += "\(weeks)W" }
        if days > 0 { text += "\(days)D" }
        if hours > 0 || minutes > 0 || seconds > 0 {
            text += "T"
            if hours > 0 { text += "\(hours)H" }
            if minutes > 0 { text += "\(minutes)M" }
            if seconds > 0 { text += "\(seconds)S" }
        }
        return text == "P" ? "P0D" : text
    }

    /// The instant this duration after `start`: calendar months first (the day clamped to the
    /// target month's length), then weeks, days and the time part.
    ///
    /// Saturates at `Int64.max` (components are non-negative), so a purchase near the end of time
    /// or an absurd duration ends at `Int64.max` instead of trapping.
    public func added(to start: Int64) -> Int64 {
        let dayNumber = Time.floorDiv(start, Time.day)
        let remainder = start % Time.day
        let timeOfDay = remainder < 0 ? remainder + Time.day : remainder  // start - dayNumber × day, which can overflow
        var shiftedDay = dayNumber
        let totalMonths = Int64(years).times(12).plus(Int64(months)).clamped(Time.civilLimit)
        if totalMonths != 0 {
            let date = Time.civilFromDays(dayNumber)
            let monthIndex = date.year * 12 + (date.month - 1) + totalMonths
            let year = Time.floorDiv(monthIndex, 12)
            let month = monthIndex - year * 12 + 1
            let day = min(date.day, Time.daysInMonth(year: year, month: month))
            shiftedDay = Time.daysFromCivil(year: year, month: month, day: day)
        }
        shiftedDay = shiftedDay.plus(Int64(weeks).times(7)).plus(Int64(days))
        return shiftedDay.times(Time.day).plus(timeOfDay).plus(Int64(hours).times(Time.hour))
            .plus(Int64(minutes).times(Time.minute)).plus(Int64(seconds).times(Time.second))
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = ISODuration(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not an ISO 8601 duration"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
