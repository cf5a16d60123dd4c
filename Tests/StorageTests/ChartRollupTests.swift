import Entitlements
import Foundation
import Storage
import Testing

/// The charts' rollups (schema version 25) on every backend: the rows a chart reads are the sum
/// of the customers' contributions, whatever order the facts arrive in, and the backfill rebuilds
/// them from the stored facts.
@Suite struct ChartRollupTests {
    static let projector = MetricRollupTests.projector
    static let day0 = MetricRollupTests.day0
    static let day = MetricRollupTests.day

    static func rows(_ store: any LedgerStore) async throws -> ChartRows {
        try await store.chartRows(
            environments: ["Production"], kinds: ChartKind.allCases, fromDay: day0 - 1, toDay: day0 + 800, segments: Set(ChartSegmentation.allCases))
    }

    /// Rows in a canonical order (the store's order is its index's).
    static func sorted(_ rows: [ChartDelta]) -> [String] {
        rows.map { "\($0.day) \($0.kind) \($0.currency) \($0.segment.product) \($0.segment.periodType) \($0.offset) \($0.value)" }.sorted()
    }

    @Test(arguments: Backend.all)
    func shuffledDeliveryAndTheBackfillGiveTheContributionsRows(_ backend: Backend) async throws {
        let history = MetricRollupTests.history
        let shuffled = [5, 17, 0, 23, 9, 2, 14, 11, 20, 7, 1, 16, 22, 4, 12, 19, 8, 3, 21, 13, 6, 18, 10, 15]
        let expected = metricContribution(facts: history.map(\.fact), policy: Self.projector.policy).charts
        #expect(expected.contains { $0.kind == .actives })
        try await withStore(backend, now: testNow + 800 * Self.day) { store, _ in
            for k in shuffled {
                _ = try await store.ingest(Fixture.batch(facts: [history[k]], claim: Claim(appUserId: "alice")),
                                           projector: Self.projector, now: testNow + 800 * Self.day)
            }
            let rows = try await Self.rows(store)
            #expect(rows.opening.isEmpty)
            #expect(Self.sorted(rows.days) == Self.sorted(expected))
            // A level's opening is the sum of the days before the range.
            let later = try await store.chartRows(environments: ["Production"], kinds: [.actives], fromDay: Self.day0 + 40, toDay: Self.day0 + 40, segments: [])
            #expect(later.opening.reduce(0) { $0 + $1.value } == expected.filter { $0.kind == .actives && $0.day < Self.day0 + 40 }.reduce(0) { $0 + $1.value })

            try await store.foldJournal()
            try await store.raw("DELETE FROM customer_metrics")
            try await store.raw("DELETE FROM metric_daily")
            try await store.raw("DELETE FROM chart_daily")
            #expect(try await store.backfillMetrics(projector: Self.projector, limit: 10) == 1)
            #expect(Self.sorted(try await Self.rows(store).days) == Self.sorted(expected))
            try await store.foldJournal()
            #expect(try await store.count("SELECT COUNT(*) FROM chart_daily WHERE value = 0") == 0)
        }
    }
}
