import Entitlements
import Testing

@testable import Storage

/// The migration that splits the shared rollups over shards (``Schema/rollupShards``), from a
/// database at the version before it holding rollups: every row keeps its sum (in shard 0), the
/// metric and chart reads return the same figures, and ingests after it add to them exactly.
@Suite struct RollupShardMigrationTests {
    static let version = Schema.rollupShards.version

    /// The three rollups as the version before kept them: no `shard`, one row per key.
    static let unsharded: [(table: String, key: String, columns: String)] = [
        ("metric_daily", "environment, day, kind, currency", "environment TEXT NOT NULL, day BIGINT NOT NULL, kind TEXT NOT NULL, currency TEXT NOT NULL"),
        ("chart_daily", "environment, kind, day, currency, month_offset, store, product, storefront, period_type",
         """
         environment TEXT NOT NULL, kind TEXT NOT NULL, day BIGINT NOT NULL, currency TEXT NOT NULL, store TEXT NOT NULL,
         product TEXT NOT NULL, storefront TEXT NOT NULL, period_type TEXT NOT NULL, month_offset BIGINT NOT NULL
         """),
        ("chart_segment_daily", "environment, kind, segmentation, day, currency, month_offset, segment",
         """
         environment TEXT NOT NULL, kind TEXT NOT NULL, segmentation TEXT NOT NULL, day BIGINT NOT NULL, currency TEXT NOT NULL,
         month_offset BIGINT NOT NULL, segment TEXT NOT NULL
         """),
    ]

    static func contributions(_ range: Range<Int>) -> [MetricContribution] {
        range.map { metricContribution(facts: HotRowLockOrderTests.batch($0).facts.map(\.fact), policy: HotRowLockOrderTests.projector.policy) }
    }

    @Test("from the version before, the rollups keep their sums and later ingests add to them", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        for i in 0..<6 {
            _ = try await store.ingest(HotRowLockOrderTests.batch(i), projector: HotRowLockOrderTests.projector, now: testNow)
        }
        try await HotRowLockOrderTests.expectRollups(store, sum: Self.contributions(0..<6))
        let day0 = HotRowLockOrderTests.day0
        let metrics = try await store.metricRollup(environment: "Production", fromDay: day0 - 10, toDay: day0 + 20)
        let charts = try await store.chartRows(
            environments: ["Production"], kinds: ChartKind.allCases, fromDay: day0 - 10, toDay: day0 + 20, segments: [.store])
        // The rows as the version before kept them (each key's shards summed into one row): the
        // journal folded first, so that no fold adds to a table while it is copied and replaced
        // (its change would be lost with the dropped table).
        try await store.foldJournal()
        for (table, key, columns) in Self.unsharded {
            try await store.raw("CREATE TABLE \(table)_before (\(columns), value BIGINT NOT NULL, PRIMARY KEY (\(key)))")
            try await store.raw("INSERT INTO \(table)_before (\(key), value) SELECT \(key), SUM(value) FROM \(table) GROUP BY \(key)")
            try await store.raw("DROP TABLE \(table)")
            try await store.raw("ALTER TABLE \(table)_before RENAME TO \(table)")
        }
        try await store.raw("DELETE FROM schema_migrations WHERE version = \(Self.version)")
        // Later versions stay recorded: only this one is to apply again.
        #expect(try await store.count("SELECT COUNT(*) FROM schema_migrations WHERE version = \(Int64(Self.version))") == 0)
        #expect(try await store.count("SELECT COUNT(*) FROM metric_daily") > 0)

        #expect(try await store.migrate().applied == [Self.version])
        for (table, _, _) in Self.unsharded {
            #expect(try await store.count(SQLQuery(verbatim: "SELECT COUNT(*) FROM \(table) WHERE shard <> 0")) == 0, "\(table)")
        }
        // The same rows (in whichever order the database groups them).
        let metricsAfter = try await store.metricRollup(environment: "Production", fromDay: day0 - 10, toDay: day0 + 20)
        #expect(metricsAfter.days == metrics.days)
        #expect(Set(metricsAfter.opening) == Set(metrics.opening) && metricsAfter.unlinkedActive == metrics.unlinkedActive)
        let chartsAfter = try await store.chartRows(
            environments: ["Production"], kinds: ChartKind.allCases, fromDay: day0 - 10, toDay: day0 + 20, segments: [.store])
        #expect(chartsAfter.days.count == charts.days.count && Set(chartsAfter.days) == Set(charts.days))
        #expect(!charts.days.isEmpty)
        // Ingests after the migration add to the migrated rows.
        for i in 6..<10 {
            _ = try await store.ingest(HotRowLockOrderTests.batch(i), projector: HotRowLockOrderTests.projector, now: testNow)
        }
        try await HotRowLockOrderTests.expectRollups(store, sum: Self.contributions(0..<10))
        let report = try await store.rebuild(projector: HotRowLockOrderTests.projector, now: testNow)
        #expect(report.differences == 0)
        await store.close()
        await database.destroy()
    }
}
