import Entitlements

@testable import Storage
import Testing

/// A chart read sums in SQL over the segments the request does not split by: on every backend,
/// each chart computed from those grouped rows is the chart computed from every row as stored.
@Suite struct ChartGroupingTests {
    static let environments = Environment.listingOrder.map(\.rawValue)

    @Test(arguments: Backend.all)
    func groupedRowsGiveTheSameChartsAsEveryRow(_ backend: Backend) async throws {
        let today = metricDay(testNow)
        // A range starting inside the histories: the levels' openings sum the days before it.
        let from = today - 400, to = today
        try await withStore(backend, now: testNow, checksRebuild: false) { store, _ in
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<1500, now: testNow)
            for chart in ChartID.allCases {
                let every = try await store.chartRows(
                    environments: Self.environments, kinds: chart.kinds, fromDay: from, toDay: to, segments: Set(ChartSegmentation.allCases))
                // Keeping every segment is the table as stored: one row per stored non-zero row.
                let stored = try await store.count(
                    """
                    SELECT COUNT(*) FROM chart_daily WHERE kind IN (\(list: chart.kinds.map(\.rawValue)))
                    AND day >= \(from) AND day <= \(to) AND value <> 0
                    """)
                #expect(Int64(every.days.count) == stored, "\(chart)")
                for segment in [nil] + ChartSegmentation.allCases {
                    let grouped = try await store.chartRows(
                        environments: Self.environments, kinds: chart.kinds, fromDay: from, toDay: to, segments: Set([segment].compactMap { $0 }))
                    // One row per key: the store sums what the request does not split by.
                    let keys = grouped.days.map {
                        "\($0.environment) \($0.kind) \($0.day) \($0.currency) \($0.offset) \($0.segment.store) \($0.segment.product) \($0.segment.storefront) \($0.segment.periodType)"
                    }
                    #expect(Set(keys).count == keys.count, "\(chart) by \(segment.map(\.rawValue) ?? "nothing")")
                    if segment == nil { #expect(grouped.days.count < every.days.count, "\(chart)") }
                    let requests = ChartInterval.allCases.map { interval in
                        ChartRequest(
                            chart: chart, from: from, to: to, interval: interval, segment: segment, today: today, reportingCurrency: "USD",
                            rates: ["USD": 1, "EUR": 1.1, "GBP": 1.25, "JPY": 0.0067])
                    }
                    let key = "ChartGroupingTests \(chart) by \(segment.map(\.rawValue) ?? "nothing")"
                    let fromGrouped = ChartPointsMemo.points(requests, rows: grouped, key: "\(key) grouped")
                    let fromEvery = ChartPointsMemo.points(requests, rows: every, key: "\(key) every")
                    for (index, interval) in ChartInterval.allCases.enumerated() {
                        #expect(!fromGrouped[index].isEmpty, "\(chart)")
                        #expect(fromGrouped[index] == fromEvery[index], "\(chart) by \(segment.map(\.rawValue) ?? "nothing") per \(interval)")
                    }
                }
            }
        }
    }

    /// The migration that re-keys `chart_daily` copies every row: run again over a loaded table
    /// (as a binary that had not applied it would), the rows and their sums are the same.
    @Test("re-keying the chart rollups keeps every row", arguments: Backend.durable)
    func rekeyKeepsEveryRow(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<300, now: testNow)
        let count = try await store.count("SELECT COUNT(*) FROM chart_daily")
        let digest: SQLQuery = "SELECT SUM(value * (day % 97 + 1) * (month_offset + 1)) FROM chart_daily"
        let sum = try await store.count(digest)
        #expect(count > 1000)
        try await store.raw("DELETE FROM schema_migrations WHERE version = 33")
        #expect(try await store.migrate().applied == [33])
        #expect(try await store.count("SELECT COUNT(*) FROM chart_daily") == count)
        #expect(try await store.count(digest) == sum)
        await store.close()
        await database.destroy()
    }
}
