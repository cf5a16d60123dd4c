import Entitlements
import Testing

@Suite("Civil dates and ISO 8601 durations")
struct TimeTests {
    @Test(arguments: [
        (1970, 1, 1, Int64(0)), (2000, 3, 1, Int64(11_017)), (2024, 2, 29, Int64(19_782)),
        (1969, 12, 31, Int64(-1)), (1600, 1, 1, Int64(-135_140)), (2100, 3, 1, Int64(47_541)),
    ])
    func knownDays(_ year: Int, _ month: Int, _ day: Int, _ expected: Int64) {
        #expect(Time.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day)) == expected)
        let back = Time.civilFromDays(expected)
        #expect(back.year == Int64(year) && back.month == Int64(month) && back.day == Int64(day))
    }

    @Test func roundTripsAcrossEightCenturies() {
        var previous = Time.civilFromDays(-150_001)
        for days in stride(from: Int64(-150_000), through: 150_000, by: 1) {
            let date = Time.civilFromDays(days)
            #expect(Time.daysFromCivil(year: date.year, month: date.month, day: date.day) == days)
            // Consecutive days advance the calendar by exactly one day.
            if date.day != 1 {
                #expect(date.day == previous.day + 1 && date.month == previous.month)
            } else {
                #expect(previous.day == Time.daysInMonth(year: previous.year, month: previous.month))
            }
            previous = date
        }
    }

    @Test(arguments: [
        ("P1M", ISODuration(months: 1)), ("P1Y", ISODuration(years: 1)), ("P7D", ISODuration(days: 7)),
        ("P3M", ISODuration(months: 3)), ("P1W", ISODuration(weeks: 1)), ("P6M", ISODuration(months: 6)),
        ("P1Y2M3DT4H5M6S", ISODuration(years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6)),
        ("PT36H", ISODuration(hours: 36)),
    ])
    func parses(_ text: String, _ expected: ISODuration) {
        #expect(ISODuration(parsing: text) == expected)
        #expect(ISODuration(parsing: expected.description) == expected)
    }

    @Test(arguments: ["", "P", "1M", "PM", "P1", "P1D1Y", "P1M1M", "P1.5M", "P-1M", "PT", "P1DT", "P1H", "PT1D", "p1m", "P1MX"])
    func rejects(_ text: String) {
        #expect(ISODuration(parsing: text) == nil)
    }

    @Test func monthArithmeticClampsToMonthEnd() {
        let jan31 = Time.millis(year: 2026, month: 1, day: 31, hour: 10)
        #expect(ISODuration(months: 1).added(to: jan31) == Time.millis(year: 2026, month: 2, day: 28, hour: 10))
        let leap = Time.millis(year: 2024, month: 1, day: 31)
        #expect(ISODuration(months: 1).added(to: leap) == Time.millis(year: 2024, month: 2, day: 29))
        let feb29 = Time.millis(year: 2024, month: 2, day: 29)
        #expect(ISODuration(years: 1).added(to: feb29) == Time.millis(year: 2025, month: 2, day: 28))
        let dec15 = Time.millis(year: 2025, month: 12, day: 15, hour: 23, minute: 59)
        #expect(ISODuration(months: 3).added(to: dec15) == Time.millis(year: 2026, month: 3, day: 15, hour: 23, minute: 59))
        #expect(ISODuration(days: 7).added(to: dec15) == dec15 + 7 * Time.day)
        // Before 1970 too.
        let old = Time.millis(year: 1965, month: 8, day: 31, hour: 6)
        #expect(ISODuration(months: 1).added(to: old) == Time.millis(year: 1965, month: 9, day: 30, hour: 6))
    }
}
