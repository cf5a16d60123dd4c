import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// The rollup journal (``RollupWrites/journaled``) against direct rollup writes: the same ingests
/// give the same metric and chart reads on every backend whether none, part or all of the
/// journal is folded, and the same rollup rows once it is; a fold that fails loses nothing.
@Suite struct RollupJournalTests {
    static let projector = PlayRollupMigrationTests.projector
    static let day0 = metricDay(testNow)
    static let now = testNow + 40 * day

    /// App Store renewals of one customer out of order, customers of their own bought on four days
    /// and ending on nine, sandbox purchases, Play subscriptions in three regions and a Play
    /// one-time product: rows of every series, store, storefront and environment.
    static let batches: [TestBatch] = {
        let shuffled = [5, 17, 0, 23, 9, 2, 14, 11, 20, 7, 1, 16, 22, 4, 12, 19, 8, 3, 21, 13, 6, 18, 10, 15]
        var batches = shuffled.map { Fixture.batch(facts: [MetricRollupTests.history[$0]], claim: Claim(appUserId: "alice")) }
        batches += (0..<30).map(HotRowLockOrderTests.batch)
        batches += (0..<4).map { i in
            let fact = Fixture.transaction(
                otid: "s\(i)", tid: "s\(i)", expires: testNow + Int64(3 + i) * day, signed: testNow - Int64(i) * day, environment: "Sandbox")
            return Fixture.batch(facts: [fact], claim: Claim(appUserId: "sandy\(i)"))
        }
        batches += (0..<6).map { i in
            Fixture.batch(facts: [PlayRollupMigrationTests.play("p\(i)", region: ["US", "DE", "JP"][i % 3])], claim: Claim(appUserId: "gina\(i)"))
        }
        batches.append(Fixture.batch(facts: [PlayRollupMigrationTests.product("c1", region: "DE")], claim: Claim(appUserId: "hank")))
        return batches
    }()

    /// Every read compared: the metrics of both environments, and the charts split and held every
    /// way the reads take (one segmentation, none, several; no filter, one, two), over a range
    /// with the history before it (opening levels) and over all of it.
    static func reads(_ store: any LedgerStore) async throws -> [String] {
        let ranges: [(Int64, Int64)] = [(day0 - 10, day0 + 90), (day0 + 5, day0 + 12)]
        let segmentations: [Set<ChartSegmentation>] = [[], [.store], [.product], [.storefront], [.periodType], [.store, .storefront],
                                                       Set(ChartSegmentation.allCases)]
        let filters = [ChartFilter(), ChartFilter(store: "playStore"), ChartFilter(storefront: "USA"),
                       ChartFilter(product: "com.example.pro", periodType: "normal")]
        func sorted<T>(_ rows: [T]) -> [String] { rows.map { "\($0)" }.sorted() }
        var reads: [String] = []
        for (from, to) in ranges {
            for environment in ["Production", "Sandbox"] {
                let rollup = try await store.metricRollup(environment: environment, fromDay: from, toDay: to)
                reads.append("metrics \(environment) \(from)…\(to): \(sorted(rollup.opening)) \(rollup.days.map { "\($0)" })")
            }
            for segments in segmentations {
                for filter in filters {
                    let rows = try await store.chartRows(
                        environments: ["Production", "Sandbox"], kinds: ChartKind.allCases, fromDay: from, toDay: to, segments: segments,
                        filter: filter)
                    reads.append("charts \(from)…\(to) \(segments.map(\.rawValue).sorted()) \(filter): \(sorted(rows.opening)) \(sorted(rows.days))")
                }
            }
        }
        return reads
    }

    /// Journal rows on `store`.
    static func journalRows(_ store: any LedgerStore) async throws -> Int64 {
        try await store.count("SELECT COUNT(*) FROM rollup_journal")
    }

    /// Folds at most `limit` journal rows in one transaction.
    static func fold(_ store: any LedgerStore, limit: Int) async throws -> Int {
        let sessions = try #require(store as? any SessionBackedStore)
        return try await sessions.write { try Ledger(session: $0, fault: nil).foldRollupJournal(limit: limit) }
    }

    /// What the journaled store told its observer of its folds.
    final class Folds: LedgerObserver {
        let folded = Mutex<[Int]>([])
        let failed = Atomic<Int>(0)
        func groupCommitted(writes: Int) {}
        func projectionsChanged(_ change: ProjectionTally) {}
        func rollupJournalFolded(rows: Int) { folded.withLock { $0.append(rows) } }
        func rollupJournalFoldFailed() { failed.add(1, ordering: .relaxed) }
    }

    /// A direct store and a journaled one whose folder never runs on its own, both given `body`.
    static func withStores(
        _ backend: Backend, fault: FaultInjector? = nil, observer: Folds? = nil,
        _ body: (_ direct: any LedgerStore, _ journaled: any LedgerStore) async throws -> Void
    ) async throws {
        try await withStore(backend, checksRebuild: false, configure: { options, _ in options.rollupWrites = .direct }) { direct, _ in
            try await withStore(backend, fault: fault, checksRebuild: false, configure: { options, _ in
                options.rollupWrites = .journaled
                options.rollupFoldDelay = .seconds(3600)
                options.ledgerObserver = observer
            }) { journaled, _ in
                for batch in batches {
                    for store in [direct, journaled] {
                        let result = try await store.ingest(batch, projector: projector, now: now)
                        #expect(result.status == .accepted)
                    }
                }
                try await body(direct, journaled)
            }
        }
    }

    @Test("reads through the journal, none, part or all of it folded, are the direct writes' reads", arguments: Backend.all)
    func readsMatchDirectWrites(_ backend: Backend) async throws {
        try await Self.withStores(backend) { direct, journaled in
            let expected = try await Self.reads(direct)
            #expect(expected.count == 60)
            #expect(try await Self.journalRows(direct) == 0)
            // Every ingest changed the rollups: a journal row each, none folded yet.
            #expect(try await Self.journalRows(journaled) == Int64(Self.batches.count))
            #expect(try await journaled.count("SELECT COUNT(*) FROM chart_daily") == 0)
            #expect(try await Self.reads(journaled) == expected)

            #expect(try await Self.fold(journaled, limit: 25) == 25)
            #expect(try await Self.journalRows(journaled) == Int64(Self.batches.count - 25))
            #expect(try await Self.reads(journaled) == expected)

            try await journaled.foldJournal()
            #expect(try await Self.journalRows(journaled) == 0)
            #expect(try await Self.reads(journaled) == expected)
            // The same rollup rows; but for rows direct writes left at zero (a change and its undoing
            // in two commits), which a fold's sum never writes.
            for query in PostgresCommitPathTests.contents.prefix(3) {
                let (folded, written) = (try await journaled.texts(query), try await direct.texts(query))
                #expect(!folded.contains { $0.last == "0" })
                #expect(folded == written.filter { $0.last != "0" }, "\(query.text(for: .sqlite))")
            }
        }
    }

    @Test("a fold that fails leaves every row in the journal; the next one folds them", arguments: Backend.all)
    func failedFoldLosesNothing(_ backend: Backend) async throws {
        let failing = Atomic<Bool>(false)
        let fault: FaultInjector = { point in
            if point == .beforeCommit && failing.load(ordering: .relaxed) { throw StorageError(.faultInjected, "test fault") }
        }
        let folds = Folds()
        try await Self.withStores(backend, fault: fault, observer: folds) { direct, journaled in
            let expected = try await Self.reads(direct)
            let store = try #require(journaled as? any SessionBackedStore)
            failing.store(true, ordering: .relaxed)
            await #expect(throws: StorageError.self) { _ = try await Self.fold(journaled, limit: 1000) }
            // The folder's own fold: the failure told to the observer (the server's metrics).
            await store.foldRollupJournal()
            failing.store(false, ordering: .relaxed)
            #expect(folds.failed.load(ordering: .relaxed) == 1)
            #expect(folds.folded.withLock { $0 } == [])
            #expect(try await Self.journalRows(journaled) == Int64(Self.batches.count))
            #expect(try await journaled.count("SELECT COUNT(*) FROM chart_daily") == 0)
            #expect(try await Self.reads(journaled) == expected)
            await store.foldRollupJournal()
            #expect(folds.folded.withLock { $0 } == [Self.batches.count])
            #expect(try await Self.journalRows(journaled) == 0)
            #expect(try await Self.reads(journaled) == expected)
        }
    }

    @Test("a journaled store folds, once open, the rows a process that ended without folding left", arguments: Backend.durable)
    func foldsRowsLeftBehind(_ backend: Backend) async throws {
        let database = try TestDatabase(migrated: backend)
        var options = database.configuration()
        try await options.startMigrated(backend)
        options.rollupWrites = .journaled
        options.rollupFoldDelay = .seconds(3600)
        // A process that ingests and ends without its fold (its rows written back as they were).
        let first = try await openStore(url: database.url, configuration: options)
        _ = try await first.ingest(Self.batches[0], projector: Self.projector, now: Self.now)
        let left = try await first.texts("SELECT body FROM rollup_journal")
        #expect(left.count == 1)
        let expected = try await Self.reads(first)
        await first.close()
        // Closed, it folded them; put back as they were before (by a store that writes directly).
        var direct = options
        direct.rollupWrites = .direct
        let editor = try await openStore(url: database.url, configuration: direct)
        #expect(try await Self.journalRows(editor) == 0)
        for table in ["metric_daily", "chart_daily", "chart_segment_daily"] { try await editor.raw("DELETE FROM \(table)") }
        for row in left { try await editor.raw("INSERT INTO rollup_journal (body) VALUES ('\(row[0] ?? "")')") }
        #expect(try await Self.journalRows(editor) == 1)
        await editor.close()

        options.rollupFoldDelay = .milliseconds(10)
        let second = try await openStore(url: database.url, configuration: options)
        let deadline = ContinuousClock.now + .seconds(20)
        while try await Self.journalRows(second) > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await Self.journalRows(second) == 0)
        #expect(try await second.count("SELECT COUNT(*) FROM chart_daily") > 0)
        #expect(try await Self.reads(second) == expected)
        await second.close()
        await database.destroy()
    }

    @Test("a journal row's text reads back as the change it holds, series this build does not know included")
    func journalTextRoundTrip() {
        var change = RollupChange()
        change.metrics[MetricRowKey(environment: "Production", day: 20_000, kind: "activeSubscriptions", currency: "")] = 3
        change.metrics[MetricRowKey(environment: "Sandbox", day: 20_001, kind: "aSeriesFromLater", currency: "EUR")] = -7
        change.charts[ChartRowKey(
            environment: "Production", kind: "actives", day: 20_000, currency: "", store: "appStore", product: "pro.monthly",
            storefront: "USA", periodType: "normal", offset: 0)] = 1
        change.charts[ChartRowKey(
            environment: "Production", kind: "aChartFromLater", day: 19_990, currency: "USD", store: "playStore", product: "p",
            storefront: "", periodType: "trial", offset: 4)] = -12
        #expect(RollupChange(encoded: change.encoded) == change)
        #expect(RollupChange(encoded: "") == RollupChange())
        // Two rows of one key (two commits' changes in one text) are summed.
        var twice = change
        twice.metrics = twice.metrics.mapValues { 2 * $0 }
        twice.charts = twice.charts.mapValues { 2 * $0 }
        #expect(RollupChange(encoded: change.encoded + "\n" + change.encoded) == twice)
    }
}
