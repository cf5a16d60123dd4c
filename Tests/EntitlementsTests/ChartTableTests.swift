import Testing

@testable import Entitlements

/// The flat-array chart table gives the points of the dictionary one (``ReferenceChartTable``),
/// in the same order and to the bit, for every chart over generated rows: several environments,
/// stores, products, storefronts (the unknown "" among them), period types, currencies (with and
/// without a rate), month offsets, negative values, opening levels, and rows outside the range.
@Suite struct ChartTableTests {
    static let from = Time.daysFromCivil(year: 2026, month: 1, day: 20)

    static func rows(_ random: inout SplitMix64, kinds: [ChartKind], count: Int, days: Int64) -> ChartRows {
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        func row(day: Int64, kind: ChartKind) -> ChartDelta {
            let money: Set<ChartKind> = [.mrr, .mrrNew, .mrrReactivated, .mrrExpansion, .mrrContraction, .mrrChurned, .revenue, .proceeds,
                                         .refundAmount, .customerRevenue]
            // Counts carry a currency now and then too: the table keeps every group it is given apart.
            let currency = money.contains(kind) || random.next() % 8 == 0 ? pick(["USD", "EUR", "JPY", "GBP"]) : ""
            let value = money.contains(kind) ? Int64(random.next() % 40_000) - 8_000 : Int64(random.next() % 12) - 2
            return ChartDelta(
                environment: pick([.production, .production, .sandbox]), day: day, kind: kind, currency: currency,
                segment: ChartSegment(store: pick(["appStore", "playStore"]), product: pick(["basic", "plus", "with,comma"]),
                                      storefront: pick(["USA", "DEU", "JPN", ""]), periodType: pick(["normal", "trial", "intro"])),
                offset: kind == .subscriptionRetained ? Int64(random.next() % 16) : 0, value: value == 0 ? 1 : value)
        }
        var result = ChartRows()
        for kind in kinds where kind.isStock {
            for _ in 0..<(count / 10) { result.opening.append(row(day: from, kind: kind)) }
        }
        for _ in 0..<count {
            // A few rows fall outside the range, which the table must leave out.
            let day = from - 3 + Int64(random.next() % UInt64(days + 6))
            result.days.append(row(day: day, kind: pick(kinds)))
        }
        return result
    }

    @Test(arguments: ChartID.allCases)
    func flatTableEqualsTheReference(_ chart: ChartID) {
        var random = SplitMix64(seed: UInt64(ChartID.allCases.firstIndex(of: chart)!) + 1)
        for round in 0..<24 {
            let days = Int64([1, 9, 40, 200, 420][round % 5])
            let rows = Self.rows(&random, kinds: chart.kinds, count: [0, 3, 60, 600][round % 4], days: days)
            let segmentations: [ChartSegmentation?] = [nil] + ChartSegmentation.allCases
            let reporting = round % 3 == 0 ? nil : "USD"
            let request = ChartRequest(
                chart: chart, from: Self.from, to: Self.from + days - 1, interval: ChartInterval.allCases[round % 3],
                segment: segmentations[round % segmentations.count], today: Self.from + Int64(random.next() % 900),
                reportingCurrency: reporting, rates: reporting == nil ? [:] : ["USD": 1, "EUR": 1.0873, "JPY": 0.0067])
            var reference = ReferenceChartTable(request: request, rows: rows)
            let expected = reference.points()
            let points = chartPoints(request, rows: rows)
            #expect(points == expected, "\(chart.rawValue) round \(round): \(points.count) points, the reference \(expected.count)")
            if round % 4 == 3 { #expect(!expected.isEmpty, "\(chart.rawValue) round \(round) compared no points") }
        }
    }
}
