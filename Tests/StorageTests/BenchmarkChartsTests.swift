import Entitlements
import Storage
import Testing

/// `bench console`'s seeded chart rollups tell the synthetic histories they stand for, on every
/// backend (the statement is one set-based insert in both dialects).
@Suite struct BenchmarkChartsTests {
    @Test(arguments: Backend.all)
    func seededChartRowsCountTheSyntheticCustomers(_ backend: Backend) async throws {
        let customers = 0..<400
        let today = metricDay(testNow)
        // Customer n pays first on `today - n % 730`, for `1 + n % 13` periods of 30 days; one in
        // twenty-five (with three periods or more) is away from its 30th to its 60th day.
        let active = customers.filter { n in
            let start = today - Int64(n % 730), end = start + 30 * Int64(1 + n % 13)
            let away = n % 25 == 3 && 1 + n % 13 >= 3 && start + 30 <= today && start + 60 > today
            return end > today && !away
        }.count
        try await withStore(backend, now: testNow, checksRebuild: false) { store, _ in
            try await _StorageBenchmark.bulkLoadCharts(store, customers: customers, now: testNow)
            let tomorrow = try await store.chartRows(environments: ["Production"], kinds: [.actives], fromDay: today + 1, toDay: today + 1, segments: [.storefront])
            #expect(tomorrow.opening.reduce(0) { $0 + $1.value } == Int64(active))
            #expect(Set(tomorrow.opening.map(\.segment.storefront)).count == 12)
            let history = try await store.chartRows(
                environments: ["Production"], kinds: [.customersNew, .subscriptionStarts], fromDay: today - 800, toDay: today, segments: [])
            for kind in [ChartKind.customersNew, .subscriptionStarts] {
                #expect(history.days.filter { $0.kind == kind }.reduce(0) { $0 + $1.value } == Int64(customers.count))
            }
        }
    }
}
