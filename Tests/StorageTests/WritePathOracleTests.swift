import Entitlements
import Foundation
import JSONCoding
import Testing

@testable import Storage

/// The durable write path's shortcuts against their plain forms: a projection's state merged from
/// its rows' evaluations is the engine's merge written as `JSONEncoder` writes it (the fast
/// writer's bytes, fractional proceeds rates included), its unencoded document is what its bytes encode,
/// rollup changes written many rows a statement leave the rows one row a statement leaves, and a
/// contribution's basis read alone is the one the whole text decodes to.
@Suite struct WritePathOracleTests {
    static let day: Int64 = 86_400_000

    @Test("a projection's merged state is the engine's merge of its environments, evaluated once each")
    func projectionSharesItsEvaluations() throws {
        let customer = CustomerRecord(id: 1, appUserId: "alice", appAccountToken: "00000000-0000-0000-0000-000000000001", createdAt: 0)
        let apple = MetricRollupTests.history.map(\.fact)
        let sandbox = Fixture.transaction(otid: "s", tid: "s1", expires: testNow + 3 * Self.day, signed: testNow, environment: "Sandbox").fact
        let xcode = Fixture.transaction(otid: "x", tid: "x1", expires: testNow + 9 * Self.day, signed: testNow, environment: "Xcode").fact
        let policy = PlayRollupMigrationTests.projector.policy
        let histories: [[Fact]] = [[], [sandbox], [xcode], Array(apple.prefix(3)), Array(apple.prefix(9)) + [sandbox, xcode], apple + [sandbox]]
        let grants: [[Environment]?] = [nil, [.production], [.sandbox], [.production, .sandbox], [.sandbox, .production, .xcode]]
        var compared = 0
        var fractional = 0
        for facts in histories {
            for now in [testNow - Self.day, testNow + 2 * Self.day, testNow + 200 * Self.day, testNow + 900 * Self.day] {
                for environments in grants {
                    let projector = Projector(policy: policy, grantEnvironments: environments)
                    var plain: CustomerState
                    if let environments {
                        plain = evaluate(facts: facts, policy: policy, now: now, environments: environments)
                    } else {
                        plain = evaluate(facts: facts, policy: policy, now: now, environment: Environment.present(in: facts).first ?? .production)
                    }
                    plain.evaluatedAt = 0
                    let stored = try projector.projection(customer: customer, facts: facts, now: now).state
                    // Foundation alone is the reference the fast writer is held to, byte for byte.
                    let reference = try CustomerDocument(customer: customer, environments: environments, state: plain)
                        .encoded(codec: JSONCodec(fastPaths: false))
                    #expect(stored == reference)
                    if String(decoding: stored, as: UTF8.self).contains("Rate\":0.") { fractional += 1 }
                    // The unencoded document events compare is the one those bytes encode.
                    #expect(try projector.document(customer: customer, facts: facts, now: now).encoded() == stored)
                    compared += 1
                }
            }
        }
        #expect(compared == 120)
        #expect(fractional > 0)
    }

    /// Rollup changes of more keys than one statement takes, some keys changed twice.
    static func changes(_ round: Int) -> (metrics: [MetricRowKey: Int64], charts: [ChartRowKey: Int64]) {
        var metrics: [MetricRowKey: Int64] = [:]
        var charts: [ChartRowKey: Int64] = [:]
        for n in 0..<150 {
            let day = Int64(20_000 + n % 40)
            let environment: Environment = n % 3 == 0 ? .sandbox : .production
            metrics[MetricRowKey(MetricDelta(environment: environment, day: day, kind: MetricKind.allCases[n % MetricKind.allCases.count],
                                             currency: n % 2 == 0 ? "" : "EUR", value: 0)), default: 0] += Int64(n % 5) - 2 + Int64(round)
            let segment = ChartSegment(store: n % 4 == 0 ? "playStore" : "appStore", product: "p\(n % 6)", storefront: n % 5 == 0 ? "" : "DEU",
                                       periodType: n % 7 == 0 ? "trial" : "normal")
            let delta = ChartDelta(environment: environment, day: day, kind: ChartKind.allCases[n % ChartKind.allCases.count],
                                   currency: n % 2 == 0 ? "" : "USD", segment: segment, offset: Int64(n % 3), value: 0)
            charts[ChartRowKey(delta), default: 0] += Int64(n % 9) - 4 + Int64(round)
        }
        return (metrics, charts)
    }

    /// Every rollup row, its shards summed (which shard a commit writes is the database's choice).
    static let rollupTables = [
        "SELECT environment, day, kind, currency, SUM(value) FROM metric_daily GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        """
        SELECT environment, kind, day, currency, store, product, storefront, period_type, month_offset, SUM(value) FROM chart_daily
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
        """,
        """
        SELECT environment, kind, segmentation, day, currency, month_offset, segment, SUM(value) FROM chart_segment_daily
        GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7
        """,
    ]

    /// Every rollup row, as text.
    static func rollupRows(_ sessions: any SessionBackedStore) async throws -> [String] {
        try await sessions.read { session in
            try rollupTables.flatMap { sql in
                try session.query(SQLQuery(verbatim: sql)).map { row in
                    try row.values.indices.map { try row.optionalText($0) ?? "NULL" }.joined(separator: "|")
                }
            }
        }
    }

    @Test("rollup changes written many rows a statement leave the rows one row a statement leaves", arguments: Backend.all)
    func multiRowRollupWrites(_ backend: Backend) async throws {
        try await withStore(backend, checksRebuild: false) { store, _ in
            let sessions = try #require(store as? any SessionBackedStore)
            func writeAll(oneRowAStatement: Bool) async throws {
                for round in 0..<2 {
                    let (metrics, charts) = Self.changes(round)
                    if oneRowAStatement {
                        for (key, value) in metrics { try await sessions.write { $0.tail.addMetric(key, value) } }
                        for (key, value) in charts { try await sessions.write { $0.tail.addChart(key, value) } }
                    } else {
                        try await sessions.write { session in
                            for (key, value) in metrics { session.tail.addMetric(key, value) }
                            for (key, value) in charts { session.tail.addChart(key, value) }
                        }
                    }
                }
            }
            try await writeAll(oneRowAStatement: true)
            try await store.foldJournal()
            let plain = try await Self.rollupRows(sessions)
            #expect(plain.count > 3 * 64)
            for table in ["metric_daily", "chart_daily", "chart_segment_daily"] { try await store.raw("DELETE FROM \(table)") }
            try await writeAll(oneRowAStatement: false)
            try await store.foldJournal()
            #expect(try await Self.rollupRows(sessions) == plain)
        }
    }

    @Test("a contribution's basis read alone is the one its whole text decodes to")
    func basisAlone() {
        let deltas = [MetricDelta(environment: .production, day: 20_000, kind: .activeSubscriptions, value: 1)]
        for basis in [MetricBasis(maxFactID: 41, factCount: 3), nil] {
            let text = MetricCodec.encode(StoredMetrics(deltas: deltas, basis: basis))
            #expect(MetricCodec.basis(text) == basis)
            #expect(MetricCodec.basis(text) == MetricCodec.decode(text).basis)
        }
        #expect(MetricCodec.basis("") == nil)
        #expect(MetricCodec.basis("#\tx\t3") == nil)
    }

    /// The stored text, pinned: the basis line, then a line per delta, then a line per chart row,
    /// each field after a tab; any one of them alone, and none at all.
    @Test("a contribution's text is its lines in order")
    func contributionText() {
        let delta = MetricDelta(environment: .production, day: 20_000, kind: .activeSubscriptions, currency: "EUR", value: -2)
        let chart = ChartDelta(
            environment: .sandbox, day: 20_001, kind: .actives, currency: "", segment: ChartSegment(product: "p", storefront: "FRA", periodType: "trial"),
            offset: 3, value: 7)
        let basis = MetricBasis(maxFactID: 41, factCount: 3)
        let deltaLine = "Production\t20000\tactiveSubscriptions\tEUR\t-2"
        let chartLine = "c\tSandbox\t20001\tactives\t\t\(chart.segment.store)\tp\tFRA\ttrial\t3\t7"
        #expect(MetricCodec.encode(StoredMetrics(deltas: [delta, delta], charts: [chart], basis: basis))
            == "#\t41\t3\n" + deltaLine + "\n" + deltaLine + "\n" + chartLine)
        #expect(MetricCodec.encode(StoredMetrics(deltas: [], charts: [chart], basis: nil)) == chartLine)
        #expect(MetricCodec.encode(StoredMetrics(deltas: [delta], charts: [], basis: nil)) == deltaLine)
        #expect(MetricCodec.encode(StoredMetrics(deltas: [], charts: [], basis: basis)) == "#\t41\t3")
        #expect(MetricCodec.encode(StoredMetrics(deltas: [], charts: [], basis: nil)) == "")
        let stored = StoredMetrics(deltas: [delta], charts: [chart, chart], basis: basis)
        #expect(MetricCodec.decode(MetricCodec.encode(stored)) == stored)
    }

    /// Tabs and newlines separate the stored contribution's fields and lines: a text that holds
    /// them is stored without them, every other one as it is.
    @Test("a contribution's texts lose only the separators they hold")
    func separatorsInTexts() {
        let segment = ChartSegment(product: "pro\tmonthly\n", storefront: "FRA", periodType: "nor\r\nmal")
        let stored = StoredMetrics(
            deltas: [MetricDelta(environment: Environment(rawValue: "Sand\tbox"), day: 20_000, kind: .activeSubscriptions, currency: "E\nUR", value: -2)],
            charts: [ChartDelta(environment: .production, day: 20_001, kind: .actives, currency: "é\t中", segment: segment, offset: 3, value: 7)],
            basis: nil)
        let decoded = MetricCodec.decode(MetricCodec.encode(stored))
        #expect(decoded.deltas == [MetricDelta(environment: Environment(rawValue: "Sandbox"), day: 20_000, kind: .activeSubscriptions, currency: "EUR", value: -2)])
        #expect(decoded.charts == [ChartDelta(
            environment: .production, day: 20_001, kind: .actives, currency: "é中",
            segment: ChartSegment(product: "promonthly", storefront: "FRA", periodType: "nor\rmal"), offset: 3, value: 7)])
        let plain = StoredMetrics(deltas: [MetricDelta(environment: .production, day: 1, kind: .activeSubscriptions, currency: "EUR", value: 1)], basis: nil)
        #expect(MetricCodec.decode(MetricCodec.encode(plain)).deltas == plain.deltas)
    }
}
