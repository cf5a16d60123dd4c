import Entitlements
import Foundation
import Storage
import Testing

/// The metric rollups (schema version 15) on every backend: kept in the projection's
/// transaction, moved by later facts, rebuilt by the backfill from the stored state.
@Suite struct MetricRollupTests {
    static let projector = Projector(entitlements: ["com.example.pro": "pro"], maintainsMetrics: true)
    static let day0 = metricDay(testNow)
    static let day: Int64 = 86_400_000

    /// A series' level at the end of `day` (stocks) or its amount on `day` (flows).
    static func value(_ rollup: MetricRollup, _ kind: MetricKind, on day: Int64) -> Int64 {
        if kind.isStock {
            return (rollup.opening + rollup.days.filter { $0.day <= day }).filter { $0.kind == kind }.reduce(0) { $0 + $1.value }
        }
        return rollup.days.filter { $0.kind == kind && $0.day == day }.reduce(0) { $0 + $1.value }
    }

    static func rollup(_ store: any LedgerStore) async throws -> MetricRollup {
        let console = store
        return try await console.metricRollup(environment: "Production", fromDay: day0 - 1, toDay: day0 + 90)
    }

    @Test(arguments: Backend.all)
    func rollupsFollowTheFactsAndTheBackfillRebuildsThem(_ backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let p = Self.projector
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o1", tid: "t1", expires: testNow + 30 * Self.day, signed: testNow)],
                              claim: Claim(appUserId: "alice")), projector: p, now: testNow)
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o2", tid: "t2", expires: testNow + 10 * Self.day, signed: testNow)],
                              claim: Claim(appUserId: "bob")), projector: p, now: testNow)
            var rollup = try await Self.rollup(store)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0 - 1) == 0)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0) == 2)
            #expect(Self.value(rollup, .newSubscriptions, on: Self.day0) == 2)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0 + 10) == 1)
            #expect(Self.value(rollup, .churned, on: Self.day0 + 10) == 1)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0 + 30) == 0)

            // alice renews on day 30: the expiry moves to day 60, and a renewal is counted.
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o1", tid: "t1b", expires: testNow + 60 * Self.day, signed: testNow + 30 * Self.day)]),
                projector: p, now: testNow + 30 * Self.day)
            rollup = try await Self.rollup(store)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0 + 30) == 1)
            #expect(Self.value(rollup, .renewals, on: Self.day0 + 30) == 1)
            #expect(Self.value(rollup, .activeSubscriptions, on: Self.day0 + 60) == 0)
            #expect(Self.value(rollup, .churned, on: Self.day0 + 30) == 0)

            // A database from before version 15: no rollups. The backfill, one customer per
            // chunk, gives the same rows.
            try await store.foldJournal()
            try await store.raw("DELETE FROM customer_metrics")
            try await store.raw("DELETE FROM metric_daily")
            let console = store
            #expect(try await console.backfillMetrics(projector: p, limit: 1) == 1)
            #expect(try await console.backfillMetrics(projector: p, limit: 1) == 1)
            #expect(try await console.backfillMetrics(projector: p, limit: 1) == 0)
            #expect(try await Self.rollup(store) == rollup)
            // Nothing left over: every daily row is some customer's contribution.
            try await store.foldJournal()
            #expect(try await store.count("SELECT COUNT(*) FROM metric_daily WHERE value = 0") == 0)
        }
    }

    /// The benchmarks' seeded customers are current ones: each is loaded with its contribution
    /// (none: it has no facts), so a server started on a seeded ledger has no backfill to run
    /// beside the requests it is timed on. `bench console`'s contributions replace those.
    @Test(arguments: Backend.all)
    func seededCustomersLeaveTheBackfillNothingToDo(_ backend: Backend) async throws {
        // A synthetic answer has no facts behind it: a rebuild would differ.
        try await withStore(backend, checksRebuild: false) { store, _ in
            // Both loaders: the set-based one (PostgreSQL) and the row-by-row one (SQLite, and
            // PostgreSQL with a projection of the caller's).
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<3, now: testNow)
            try await _StorageBenchmark.bulkLoad(store, customers: 3..<5, now: testNow) { _, _, _ in
                CustomerProjection(entitlements: [], subscriptions: [], state: Array("{}".utf8))
            }
            #expect(try await store.count("SELECT COUNT(*) FROM customer_metrics") == 5)
            #expect(try await store.backfillMetrics(projector: Self.projector, limit: 10) == 0)

            try await _StorageBenchmark.bulkLoadMetrics(store, customers: 0..<5, now: testNow)
            #expect(try await store.count("SELECT COUNT(*) FROM customer_metrics WHERE deltas <> ''") == 5)
        }
    }

    @Test func deltasDropZerosAndRoundTrip() {
        let facts = [Fixture.transaction(otid: "o", tid: "t", expires: testNow + 5 * Self.day, signed: testNow).fact]
        let deltas = metricDeltas(facts: facts, policy: Self.projector.policy)
        #expect(deltas.contains(MetricDelta(environment: .production, day: Self.day0, kind: .activeSubscriptions, value: 1)))
        #expect(deltas.contains(MetricDelta(environment: .production, day: Self.day0 + 5, kind: .activeSubscriptions, value: -1)))
        #expect(!deltas.contains { $0.value == 0 })
    }

    /// Two years of monthly renewals, with a lapse of five days every seventh month (churn, then
    /// a new period), one transaction a fact.
    static let history: [SignedFact] = (0..<24).map { k in
        let start = testNow + Int64(k) * 30 * day
        let end = k % 7 == 6 ? start + 25 * day : start + 30 * day
        return Fixture.transaction(otid: "o", tid: "t\(k)", expires: end, signed: start)
    }

    /// Ingests `order` of ``history`` one fact per notification, and returns the rollup.
    static func rollup(ingesting order: [Int], _ backend: Backend) async throws -> MetricRollup {
        var result: MetricRollup?
        try await withStore(backend, now: testNow + 800 * day) { store, _ in
            for k in order {
                _ = try await store.ingest(Fixture.batch(facts: [history[k]], claim: Claim(appUserId: "alice")),
                                           projector: projector, now: testNow + 800 * day)
            }
            let console = store
            result = try await console.metricRollup(environment: "Production", fromDay: day0 - 1, toDay: day0 + 800)
            // The incremental contribution equals the one computed from scratch.
            try await store.foldJournal()
            try await store.raw("DELETE FROM customer_metrics")
            try await store.raw("DELETE FROM metric_daily")
            #expect(try await console.backfillMetrics(projector: projector, limit: 10) == 1)
            #expect(try await console.metricRollup(environment: "Production", fromDay: day0 - 1, toDay: day0 + 800) == result)
        }
        return try #require(result)
    }

    @Test(arguments: Backend.all)
    func lateAndShuffledDeliveryGiveTheInOrderRollups(_ backend: Backend) async throws {
        let inOrder = try await Self.rollup(ingesting: Array(0..<24), backend)
        #expect(Self.value(inOrder, .activeSubscriptions, on: Self.day0 + 200) == 1)
        #expect(Self.value(inOrder, .churned, on: Self.day0 + 6 * 30 + 25) == 1)
        let shuffled = [5, 17, 0, 23, 9, 2, 14, 11, 20, 7, 1, 16, 22, 4, 12, 19, 8, 3, 21, 13, 6, 18, 10, 15]
        #expect(try await Self.rollup(ingesting: shuffled, backend) == inOrder)
        // The oldest fact last: everything is recomputed from its day.
        #expect(try await Self.rollup(ingesting: Array(1..<24) + [0], backend) == inOrder)
    }

    /// The cost the incremental form saves: one new fact at the end of a long history takes a few
    /// evaluations instead of about two per period, with the same contribution.
    @Test func aNewFactReevaluatesOnlyFromItsDay() {
        let facts = Self.history.map(\.fact)
        let policy = Self.projector.policy
        let before = metricContribution(facts: Array(facts.dropLast()), policy: policy)
        let full = metricContribution(facts: facts, policy: policy)
        let incremental = metricContribution(facts: facts, policy: policy, reusing: (before.deltas, metricDay(facts.last!.date)))
        #expect(incremental.deltas == full.deltas)
        #expect(full.evaluations >= 24)
        #expect(incremental.evaluations <= 4)  // The day before, the fact's, the expiry, retry's end.
    }
}
