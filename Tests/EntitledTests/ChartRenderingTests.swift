import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import EntitledServer

/// The chart writers against their references over generated charts (empty ones, segmented
/// ones, several currencies, converted money, rates, awkward strings): the fast JSON is
/// `JSONEncoder.entitledDefault`'s bytes for ``ChartBody``, and the CSV reads back to the points.
@Suite struct ChartRenderingTests {
    static func points(_ random: inout SplitMix64, count: Int, segmented: Bool) -> [ChartPoint] {
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        var points: [ChartPoint] = []
        var day = Time.daysFromCivil(year: 2026, month: 1, day: 1)
        for _ in 0..<count {
            if random.next() % 4 == 0 { day += 1 + Int64(random.next() % 40) }
            let money = random.next() % 2 == 0
            let value: Double = switch random.next() % 6 {
            case 0: Double(Int64(random.next() % 2_000_000) - 1_000_000)  // a count
            case 1: Double(Int64(random.next() % 20_000_000) - 5_000_000) / 1000  // money in units
            case 2: Double(random.next() % 1000) / Double(1 + random.next() % 997)  // a rate
            case 3: (Double(random.next() % 100_000) * 1.0873 * 100).rounded() / 100  // converted
            case 4: pick([0.1 + 0.2, 1e15, 1.5e16, -0.0, 5e-324, 123_456_789.125])
            default: Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF) * (random.next() % 2 == 0 ? 1 : -1)
            }
            points.append(ChartPoint(
                date: day, series: pick(["mrr", "new", "rate", "month_12", "ltv", "payingCustomers"]),
                segment: segmented ? pick(["USA", "", "com.example.plus", "with,comma", "quote\"d", "line\nbreak", "é/ü\u{1}\t"]) : nil,
                currency: money ? pick(["USD", "EUR", "JPY"]) : nil, converted: money && random.next() % 3 == 0, value: value))
        }
        return points
    }

    static func request(_ random: inout SplitMix64, segmented: Bool) -> ChartRequest {
        ChartRequest(
            chart: ChartID.allCases[Int(random.next() % UInt64(ChartID.allCases.count))], from: 20_454, to: 20_454 + Int64(random.next() % 900),
            interval: ChartInterval.allCases[Int(random.next() % 3)],
            segment: segmented ? ChartSegmentation.allCases[Int(random.next() % UInt64(ChartSegmentation.allCases.count))] : nil,
            today: 21_000)
    }

    /// No filter, or some of the four (product ids with characters JSON escapes).
    static func filter(_ random: inout SplitMix64) -> ChartFilter {
        func pick(_ values: [String]) -> String { values[Int(random.next() % UInt64(values.count))] }
        var filter = ChartFilter()
        guard random.next() % 3 != 0 else { return filter }
        for (segmentation, values) in [
            (ChartSegmentation.store, ["appStore", "playStore"]), (.product, ["pro.monthly", "quote\"d/é", "with,comma\\ü"]),
            (.storefront, ["USA", "FRA"]), (.periodType, ["trial", "normal"]),
        ] where random.next() % 2 == 0 {
            let held = filter.hold(segmentation, at: pick(values))
            precondition(held)
        }
        return filter
    }

    @Test func fastJSONIsFoundationsBytes() throws {
        var random = SplitMix64(seed: 38)
        var filtered = 0
        for round in 0..<60 {
            let segmented = round % 2 == 1
            let request = Self.request(&random, segmented: segmented)
            let points = Self.points(&random, count: [0, 1, 7, 300][round % 4], segmented: segmented)
            let environment: Environment? = round % 3 == 0 ? nil : .production
            let reporting = round % 5 == 0 ? nil : "USD"
            let filter = Self.filter(&random)
            if !filter.isEmpty { filtered += 1 }
            let fast = try ChartRendering(fastPaths: true).json(
                request, environment: environment, filter: filter, reportingCurrency: reporting, points: points)
            let reference = try ChartRendering(fastPaths: false).json(
                request, environment: environment, filter: filter, reportingCurrency: reporting, points: points)
            #expect(fast == reference, "round \(round): \(String(decoding: fast.prefix(300), as: UTF8.self))")
        }
        #expect(filtered >= 20, "the filters' member is written in enough rounds")
    }

    /// A value JSON cannot hold makes the fast writer step aside: the answer is the reference's error.
    @Test func aValueThatIsNotFiniteIsLeftToTheReference() {
        let points = [ChartPoint(date: 20_454, series: "rate", value: .infinity)]
        let request = ChartRequest(chart: .churn, from: 20_454, to: 20_454, interval: .day, today: 20_454)
        #expect(ChartRendering.fastJSON(request, environment: .production, filter: ChartFilter(), reportingCurrency: nil, points: points) == nil)
        #expect(throws: EncodingError.self) {
            try ChartRendering(fastPaths: true).json(request, environment: .production, filter: ChartFilter(), reportingCurrency: nil, points: points)
        }
    }

    @Test func csvReadsBackToThePoints() throws {
        var random = SplitMix64(seed: 83)
        for round in 0..<40 {
            let points = Self.points(&random, count: [0, 1, 7, 300][round % 4], segmented: round % 2 == 1)
            let text = String(decoding: ChartRendering(fastPaths: true).csv(points), as: UTF8.self)
            let records = Self.records(text)
            #expect(records.first == ["date", "series", "segment", "currency", "converted", "value"])
            #expect(records.count == points.count + 1, "round \(round)")
            for (point, record) in zip(points, records.dropFirst()) {
                #expect(record.count == 6)
                #expect(record[0] == OverviewBody.format(point.date))
                #expect(record[1] == point.series && record[2] == point.segment ?? "" && record[3] == point.currency ?? "")
                #expect(record[4] == (point.converted ? "true" : "false"))
                #expect(Double(record[5]) == point.value || (point.value == 0 && record[5] == "0"), "\(record[5]) for \(point.value)")
                // Whole numbers below 10^15 without a fraction; others as Swift's shortest round trip.
                if point.value == point.value.rounded() && abs(point.value) < 1e15 { #expect(!record[5].contains(".") && !record[5].contains("e")) }
            }
        }
    }

    /// RFC 4180 records (CRLF between records; quoted fields may hold commas, quotes and line breaks).
    static func records(_ text: String) -> [[String]] {
        var records: [[String]] = [], record: [String] = [], field = "", quoted = false
        var characters = Array(text.unicodeScalars)[...]
        while let c = characters.popFirst() {
            if quoted {
                if c == "\"" {
                    if characters.first == "\"" { field.unicodeScalars.append(characters.removeFirst()) } else { quoted = false }
                } else {
                    field.unicodeScalars.append(c)
                }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                record.append(field)
                field = ""
            } else if c == "\r", characters.first == "\n" {
                characters.removeFirst()
                record.append(field)
                records.append(record)
                (record, field) = ([], "")
            } else {
                field.unicodeScalars.append(c)
            }
        }
        return records
    }
}
