import Entitlements
import Testing

@testable import Storage

/// A chart read held to one value of a segment (``ChartFilter``), filtered in SQL, on every
/// backend: the chart is the unfiltered chart segmented by that dimension taken at that value,
/// and, split by any segmentation, the chart of every stored row kept where it holds the value.
@Suite struct ChartFilterTests {
    static let environments = Environment.listingOrder.map(\.rawValue)
    static let dimensions: [ChartSegmentation] = [.store, .product, .storefront, .periodType]

    /// The rows holding every value `filter` holds, kept here rather than in SQL.
    static func holding(_ filter: ChartFilter, _ rows: [ChartDelta]) -> [ChartDelta] {
        rows.filter { row in dimensions.allSatisfy { dimension in filter.value(dimension).map { $0 == dimension.value(row) } ?? true } }
    }

    @Test(arguments: Backend.all)
    func filteredChartsAreTheSegmentAtTheValue(_ backend: Backend) async throws {
        let today = metricDay(testNow)
        // A range starting inside the histories: the levels' openings sum the days before it.
        let from = today - 400, to = today
        try await withStore(backend, now: testNow, checksRebuild: false) { store, _ in
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<600, now: testNow)
            for chart in ChartID.allCases {
                func read(_ segments: Set<ChartSegmentation>, _ filter: ChartFilter = ChartFilter()) async throws -> ChartRows {
                    try await store.chartRows(
                        environments: Self.environments, kinds: chart.kinds, fromDay: from, toDay: to, segments: segments, filter: filter)
                }
                /// `rows` names where the rows came from (a read or a filter here).
                func points(_ segment: ChartSegmentation?, _ rows: ChartRows, _ source: String) -> [ChartPoint] {
                    let request = ChartRequest(
                        chart: chart, from: from, to: to, interval: .month, segment: segment, today: today, reportingCurrency: "USD",
                        rates: ["USD": 1, "EUR": 1.1, "GBP": 1.25, "JPY": 0.0067])
                    let key = "ChartFilterTests \(chart) by \(segment.map(\.rawValue) ?? "nothing") from \(source)"
                    return ChartPointsMemo.points([request], rows: rows, key: key)[0]
                }
                let every = try await read(Set(ChartSegmentation.allCases))
                for dimension in Self.dimensions {
                    let segmented = points(dimension, try await read([dimension]), "a read")
                    // Two of the values the rows hold (a trial chart's rows are all of one period type).
                    let values = Set(every.days.map { dimension.value($0) }).sorted().prefix(2)
                    #expect(!values.isEmpty, "\(chart) \(dimension)")
                    for value in values {
                        var filter = ChartFilter()
                        let held = filter.hold(dimension, at: value)
                        #expect(held, "\(dimension) \(value)")
                        let filtered = points(nil, try await read([], filter), "a read held to \(filter)")
                        let want = segmented.filter { $0.segment == value }.map { point in
                            var point = point
                            point.segment = nil
                            return point
                        }
                        #expect(!filtered.isEmpty, "\(chart) \(dimension)=\(value)")
                        #expect(filtered == want, "\(chart) \(dimension)=\(value)")
                        // Combined with a split (the same dimension reads the per-segmentation
                        // table, another `chart_daily`) and with a second filter.
                        var both = filter
                        let other = Self.dimensions.first { $0 != dimension }!
                        _ = both.hold(other, at: Set(every.days.map { other.value($0) }).sorted()[0])
                        // Every stored row that holds each filter's values: the same rows for every split.
                        let kept = [filter, both].map { filter in
                            (filter, ChartRows(opening: Self.holding(filter, every.opening), days: Self.holding(filter, every.days)))
                        }
                        for segment in [nil] + ChartSegmentation.allCases {
                            for (filter, kept) in kept {
                                let got = points(segment, try await read(Set([segment].compactMap { $0 }), filter), "a read held to \(filter)")
                                #expect(
                                    got == points(segment, kept, "every row held to \(filter)"),
                                    "\(chart) \(filter) by \(segment.map(\.rawValue) ?? "nothing")")
                            }
                        }
                    }
                }
            }
        }
    }
}
