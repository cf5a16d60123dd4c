import Entitlements
import Testing

@testable import Storage

/// The charts' rollups per segmentation (`chart_segment_daily`) on every backend: whichever way
/// they are written (each transaction's changes, the backfill, the benchmark's loader, the
/// migration that adds them), every row is the plain sum of `chart_daily` over the segment
/// columns it does not keep, and no sum is missing.
@Suite struct ChartSegmentRollupTests {
    static let environments = Environment.listingOrder.map(\.rawValue)

    /// A row's key with only `segmentation`'s value kept (a struct rather than one string: the
    /// sums below key every row of every segmentation).
    struct Key: Hashable {
        let environment: Environment, kind: ChartKind, day: Int64, currency: String, offset: Int64, value: String
    }

    /// A row's key with only `segmentation`'s value kept.
    static func key(_ row: ChartDelta, _ segmentation: ChartSegmentation?) -> Key {
        let value: String
        switch segmentation {
        case nil, .environment: value = ""
        case .store: value = row.segment.store
        case .product: value = row.segment.product
        case .storefront: value = row.segment.storefront
        case .periodType: value = row.segment.periodType
        }
        return Key(environment: row.environment, kind: row.kind, day: row.day, currency: row.currency, offset: row.offset, value: value)
    }

    /// How many rows per segmentation differ from the plain sums of every stored `chart_daily`
    /// row (read through the store's general path, summed here), both ways; and how many sums there are.
    static func difference(_ store: any LedgerStore) async throws -> (differing: Int, sums: Int) {
        func rows(_ segments: Set<ChartSegmentation>) async throws -> [ChartDelta] {
            try await store.chartRows(environments: environments, kinds: ChartKind.allCases, fromDay: -100_000, toDay: 200_000, segments: segments).days
        }
        let every = try await rows(Set(ChartSegmentation.allCases))
        var differing = 0, sums = 0
        for segmentation in [nil, .store, .product, .storefront, .periodType] as [ChartSegmentation?] {
            var want: [Key: Int64] = [:], have: [Key: Int64] = [:]
            for row in every { want[key(row, segmentation), default: 0] += row.value }
            want = want.filter { $0.value != 0 }
            let stored = try await rows(Set([segmentation].compactMap { $0 }))
            for row in stored { have[key(row, segmentation), default: 0] += row.value }
            differing += stored.count - have.count  // a key twice
            differing += Set(want.keys).union(have.keys).filter { want[$0] != have[$0] }.count
            sums += want.count
        }
        return (differing, sums)
    }

    @Test(arguments: Backend.all)
    func writesAndTheBackfillKeepThePlainSums(_ backend: Backend) async throws {
        let history = MetricRollupTests.history
        let shuffled = [5, 17, 0, 23, 9, 2, 14, 11, 20, 7, 1, 16, 22, 4, 12, 19, 8, 3, 21, 13, 6, 18, 10, 15]
        let now = testNow + 800 * MetricRollupTests.day
        try await withStore(backend, now: now) { store, _ in
            for (index, k) in shuffled.enumerated() {
                _ = try await store.ingest(Fixture.batch(facts: [history[k]], claim: Claim(appUserId: "alice")), projector: ChartRollupTests.projector, now: now)
                // Each fact out of order moves earlier days' rows, which the segment rows follow.
                if index % 6 == 5 {
                    let (differing, sums) = try await Self.difference(store)
                    #expect(differing == 0)
                    #expect(sums > 0)
                }
            }
            let (differing, sums) = try await Self.difference(store)
            #expect(differing == 0)
            // Every segmentation is written: none, store, product, storefront and period type.
            try await store.foldJournal()
            #expect(try await store.count("SELECT COUNT(DISTINCT segmentation) FROM chart_segment_daily") == 5)

            try await store.raw("DELETE FROM customer_metrics")
            try await store.raw("DELETE FROM metric_daily")
            try await store.raw("DELETE FROM chart_daily")
            try await store.raw("DELETE FROM chart_segment_daily")
            #expect(try await store.backfillMetrics(projector: ChartRollupTests.projector, limit: 10) == 1)
            #expect(try await Self.difference(store) == (0, sums))
        }
    }

    @Test(arguments: Backend.all)
    func theBenchmarksLoaderKeepsThePlainSums(_ backend: Backend) async throws {
        try await withStore(backend, now: testNow, checksRebuild: false) { store, _ in
            // Twice: the second load adds to the first's rows.
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<300, now: testNow)
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 300..<700, now: testNow)
            let (differing, sums) = try await Self.difference(store)
            #expect(differing == 0)
            #expect(sums > 1000)
        }
    }

    /// The migration that adds the table fills it from the rows `chart_daily` holds then.
    @Test(arguments: Backend.durable)
    func theMigrationFillsThePlainSums(_ backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<300, now: testNow)
        let sums = try await Self.difference(store).sums
        try await store.raw("DROP TABLE chart_segment_daily")
        let version = try await store.count("SELECT MAX(version) FROM schema_migrations WHERE name = 'chart rollups per segmentation'")
        try await store.raw("DELETE FROM schema_migrations WHERE version = \(version)")
        #expect(try await store.migrate().applied == [Int(version)])
        #expect(try await Self.difference(store) == (0, sums))
        await store.close()
        await database.destroy()
    }
}
