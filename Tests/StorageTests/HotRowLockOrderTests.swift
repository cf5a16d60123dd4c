import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// The rows every ingest shares — the metric and chart rollups, the ingest counters, the outbox
/// lock — are written once per transaction, at its commit, in one global order, into the
/// transaction's own shard (``TransactionTail``, ``RollupShards``): group commits of several
/// servers on one PostgreSQL never deadlock on them nor wait for each other's, every reader sums
/// the shards exactly, and a job rolled back to its savepoint takes its share of them along.
@Suite struct HotRowLockOrderTests {
    static let projector = Projector(entitlements: ["com.example.pro": "pro"], maintainsMetrics: true)
    static let day0 = metricDay(testNow)

    /// Ingest `i`: a customer and subscription of its own (so no two jobs lock the same customer),
    /// bought on one of four days and ending on one of nine, so that jobs' rollup rows overlap
    /// partly, the way that deadlocked.
    static func batch(_ i: Int) -> TestBatch {
        let signed = testNow - Int64(i % 4) * day
        let fact = Fixture.transaction(otid: "hot\(i)", tid: "hot\(i)", expires: testNow + Int64(1 + i % 9) * day, signed: signed)
        return Fixture.batch(facts: [fact], receivedAt: testNow + Int64(i), claim: Claim(appUserId: "hot-user\(i)"))
    }

    /// Every backend with its rollup writes: PostgreSQL's both ways (``RollupWrites``).
    static let backendsAndRollups: [(Backend, RollupWrites)] = Backend.all.flatMap { backend in
        backend == .postgres ? [(backend, .direct), (backend, .journaled)] : [(backend, RollupWrites.standard(.sqlite))]
    }

    @Test("concurrent group commits of two servers: no deadlock, rollups exact", arguments: backendsAndRollups)
    func concurrentGroupCommits(_ backend: Backend, _ rollups: RollupWrites) async throws {
        let count = 480
        // Every seventh projection fails after the rollups, events and counters were noted: that
        // job is rolled back to its savepoint (alone, when its group has others).
        let calls = Calls()
        let fault: FaultInjector = { point in
            guard point == .afterProjections else { return }
            if calls.count.withLock({ $0 += 1; return $0 % 7 == 0 }) { throw StorageError(.faultInjected, "test fault") }
        }
        let (database, admin) = try Self.database(backend)
        var options = database.configuration(fault: fault)
        options.postgresGroupCommit = 8
        options.rollupWrites = rollups
        let first = try await openStore(url: database.url, configuration: options)
        // Two pools on one database, as two servers have (SQLite: one writer, one store).
        let second = backend == .postgres ? try await openStore(url: database.url, configuration: options) : first
        let deadlocksBefore = try admin.map { try Self.stats($0, database: database.name).deadlocks } ?? 0

        // Each ingest: its index when accepted, nil when the fault hit it, else its error.
        let outcomes = await withTaskGroup(of: Result<Int?, any Error>.self) { group in
            for i in 0..<count {
                group.addTask {
                    do {
                        let result = try await (i % 2 == 0 ? first : second).ingest(Self.batch(i), projector: Self.projector, now: testNow)
                        return .success(result.status == .accepted ? i : nil)
                    } catch let error as StorageError where error.code == .faultInjected {
                        return .success(nil)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: [Result<Int?, any Error>]()) { $0.append($1) }
        }
        let succeeded = outcomes.compactMap { try? $0.get() }
        let errors = outcomes.compactMap { if case .failure(let error) = $0 { "\(error)" } else { nil } }
        #expect(errors.isEmpty, "\(errors.count) ingests failed, e.g. \(errors.first ?? "")")
        #expect(succeeded.count > count / 2 && succeeded.count < count)

        // Rollups and charts: exactly the sum of the accepted ingests' contributions, in every read,
        // with the journal's rows as they are (folded or not), then with every row folded.
        let contributions = succeeded.map { metricContribution(facts: Self.batch($0).facts.map(\.fact), policy: Self.projector.policy) }
        try await Self.expectRollups(first, sum: contributions)
        try await first.foldJournal()
        #expect(try await first.count("SELECT COUNT(*) FROM rollup_journal") == 0)
        try await Self.expectRollups(second, sum: contributions)
        #expect(try await first.count("SELECT COUNT(*) FROM metric_daily WHERE value = 0") == 0)
        if backend == .postgres && rollups == .direct {
            // The two servers' overlapping commits wrote more than one shard of the day's rows.
            #expect(try await first.count("SELECT COUNT(DISTINCT shard) FROM metric_daily") > 1)
        }
        // Counters and events: the accepted ones, each once.
        #expect(try await first.rows("notifications") == Int64(succeeded.count))
        #expect(try await first.count("SELECT COALESCE(SUM(count), 0) FROM ingest_hourly WHERE code = ''") == Int64(succeeded.count))
        #expect(try await first.count("SELECT MAX(received_at) FROM ingest_latest") == testNow + Int64(succeeded.max() ?? 0))
        #expect(try await first.count("SELECT COUNT(DISTINCT app_user_id) FROM events") == Int64(succeeded.count))
        #expect(try await first.count("SELECT COUNT(*) FROM events WHERE customer_id NOT IN (SELECT id FROM customers)") == 0)

        if backend == .postgres { await second.close() }
        await first.close()
        if let admin {
            // Each closed connection's backend reports its statistics as it exits.
            let deadline = ContinuousClock.now + .seconds(20)
            while try Self.stats(admin, database: database.name).backends > 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            let after = try Self.stats(admin, database: database.name)
            #expect(after.backends == 0)
            #expect(after.deadlocks == deadlocksBefore, "deadlocks: \(after.deadlocks - deadlocksBefore)")
            try admin.execute("DROP DATABASE \"\(database.name)\"")
        } else {
            await database.test.destroy()
        }
    }

    /// The metric rollups and the charts read through `store` (every segment, from `chart_daily`;
    /// none and one, from `chart_segment_daily`) equal the sums of `contributions` plus `extra`.
    static func expectRollups(_ store: any LedgerStore, sum contributions: [MetricContribution], extra: [MetricDelta] = []) async throws {
        var expected: [String: Int64] = [:]
        for delta in contributions.flatMap(\.deltas) + extra {
            expected["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value
        }
        let rollup = try await store.metricRollup(environment: "Production", fromDay: day0 - 10, toDay: day0 + 20)
        #expect(rollup.opening.isEmpty)
        var stored: [String: Int64] = [:]
        for delta in rollup.days { stored["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value }
        #expect(rollup.days.count == stored.count, "one row per day, series and currency")
        #expect(stored == expected.filter { $0.value != 0 })
        for segments in [Set(ChartSegmentation.allCases), [], [.product]] as [Set<ChartSegmentation>] {
            var expectedCharts: [String: Int64] = [:]
            for delta in contributions.flatMap(\.charts) { expectedCharts[chartKey(delta, segments), default: 0] += delta.value }
            let charts = try await store.chartRows(
                environments: ["Production"], kinds: ChartKind.allCases, fromDay: day0 - 10, toDay: day0 + 20, segments: segments)
            var storedCharts: [String: Int64] = [:]
            for delta in charts.days { storedCharts[chartKey(delta, segments), default: 0] += delta.value }
            #expect(charts.days.count == storedCharts.count, "one row per key: \(segments)")
            #expect(storedCharts == expectedCharts.filter { $0.value != 0 }, "\(segments)")
        }
    }

    /// A chart row's key with only the segments a read splits by.
    static func chartKey(_ delta: ChartDelta, _ segments: Set<ChartSegmentation>) -> String {
        let segment = delta.segment
        let kept = [(ChartSegmentation.product, segment.product), (.store, segment.store), (.storefront, segment.storefront),
                    (.periodType, segment.periodType)].map { segments.contains($0.0) ? $0.1 : "" }
        return "\(delta.day) \(delta.kind.rawValue) \(delta.currency) \(kept) \(delta.offset)"
    }

    @Test("a commit writes a shard of the shared rows no open commit holds: two servers never wait on them; rollups and charts exact",
          arguments: Backend.postgresOnly, [RollupWrites.direct, .journaled])
    func commitsWriteTheirOwnShards(_ backend: Backend, _ rollups: RollupWrites) async throws {
        let count = 8
        let (database, admin) = try Self.database(backend)
        let adminConnection = try #require(admin)
        var options = database.configuration(fault: nil)
        // One ingest a transaction, so that each commits on its own; a commit that waited for the
        // open transaction below would fail at this timeout instead of hanging the test.
        options.postgresGroupCommit = 1
        options.postgresStatementTimeoutMilliseconds = 20_000
        options.rollupWrites = rollups
        let first = try await openStore(url: database.url, configuration: options)
        let second = try await openStore(url: database.url, configuration: options)
        // One ingest first: the rows every ingest shares before its commit (the signed texts'
        // headers) exist, as they do on a running server, so no transaction waits on another's.
        #expect(try await first.ingest(Self.batch(count), projector: Self.projector, now: testNow).status == .accepted)
        // Another transaction writes the day's hot rows (today's actives, the hour's count) the
        // way a commit does, and stays open: it holds its shard and those rows.
        var holder: PostgresConnection? = try PostgresConnection(conninfo: database.url, schema: nil, statementTimeoutMilliseconds: 120_000)
        try holder?.execute("BEGIN")
        let tail = TransactionTail()
        tail.begin()
        let hot = MetricDelta(environment: .production, day: Self.day0, kind: .activeSubscriptions, value: 5)
        tail.addMetric(MetricRowKey(hot), hot.value)
        tail.countMessage(hour: testNow / 3_600_000, code: IngestCounters.accepted)
        try tail.flush(try #require(holder))
        #expect(try #require(holder).query("SELECT current_setting('entitled.rollup_shard')", [])[0].text(0) == "0")

        // Both servers' ingests commit while it is open: none waits for its rows.
        let accepted = try await withThrowingTaskGroup(of: Int?.self) { group in
            for i in 0..<count {
                group.addTask {
                    let result = try await (i % 2 == 0 ? first : second).ingest(Self.batch(i), projector: Self.projector, now: testNow)
                    return result.status == .accepted ? i : nil
                }
            }
            return try await group.reduce(into: [Int]()) { if let i = $1 { $0.append(i) } }
        }
        #expect(accepted.count == count)
        // Journaled, the commits wrote none of those rows; a fold of their journal rows does, and
        // does not wait for the open transaction's rows either.
        try await first.foldJournal()
        try holder?.execute("COMMIT")
        holder = nil

        // Today's actives are now in shard 0 (the holder's) and the ingests' shards: every read sums them.
        #expect(try await first.count(
            "SELECT COUNT(DISTINCT shard) FROM metric_daily WHERE day = \(Self.day0) AND kind = 'activeSubscriptions'") >= 2)
        let contributions = (accepted + [count]).map { metricContribution(facts: Self.batch($0).facts.map(\.fact), policy: Self.projector.policy) }
        for store in [first, second] { try await Self.expectRollups(store, sum: contributions, extra: [hot]) }
        #expect(try await first.count("SELECT SUM(count) FROM ingest_hourly WHERE code = ''") == Int64(count + 2))
        await second.close()
        await first.close()
        let deadlineClosed = ContinuousClock.now + .seconds(20)
        while try Self.stats(adminConnection, database: database.name).backends > 0 && ContinuousClock.now < deadlineClosed {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try Self.stats(adminConnection, database: database.name).deadlocks == 0)
        try adminConnection.execute("DROP DATABASE \"\(database.name)\"")
    }

    @Test("the tail sums per row, sorts, drops a rolled-back job's share and erased events")
    func tailStatements() {
        let tail = TransactionTail()
        tail.begin()
        let later = MetricRowKey(MetricDelta(environment: .production, day: 9, kind: .activeSubscriptions, value: 0))
        let earlier = MetricRowKey(MetricDelta(environment: .production, day: 3, kind: .activeSubscriptions, value: 0))
        let event = { (id: String, user: String) in
            OutboxEvent(
                sequence: 0, id: id, type: "t", appUserId: user, appAccountToken: nil, environment: nil, bundleId: nil,
                productId: nil, originalTransactionId: nil, entitlements: [], details: [:], cause: "{}", occurredAt: 0,
                recordedAt: 0, answer: [])
        }
        tail.addMetric(later, 2)
        tail.countMessage(hour: 5, code: "")
        tail.appendEvent(event("e1", "ann"), answerPacked: [], customerID: 1)
        tail.release()
        // A job rolled back to its savepoint: its share goes with it.
        tail.addMetric(earlier, 7)
        tail.appendEvent(event("e2", "bob"), answerPacked: [], customerID: 2)
        tail.rollBack()
        tail.addMetric(earlier, 1)
        tail.addMetric(later, -2)
        tail.countMessage(hour: 5, code: "")
        tail.noteLatest(bundleId: "b", environment: "Production", receivedAt: 10)
        tail.noteLatest(bundleId: "b", environment: "Production", receivedAt: 4)
        tail.appendEvent(event("e3", "cat"), answerPacked: [], customerID: 3)
        tail.appendEvent(event("e4", "dan"), answerPacked: [], customerID: 4)
        tail.dropEvents(customerIDs: [3], appUserIds: ["dan"])
        let statements = tail.statements(dialect: .postgres)
        // The shard's choice first; `later` summed to nothing: left alone. Then the counters, the
        // outbox lock, the one event left; every shared row into the chosen shard.
        #expect(statements.map(\.binds.first) == [nil, .text("Production"), .int(5), .text("b"), nil, .text("e1")])
        #expect(statements[0].text(for: .postgres).contains("pg_try_advisory_xact_lock(hashtextextended('entitled.rollups.'"))
        #expect(statements[1].binds == [.text("Production"), .int(3), .text("activeSubscriptions"), .text(""), .int(1)])
        for statement in statements[1...3] {
            #expect(statement.text(for: .postgres).contains("current_setting('entitled.rollup_shard')"))
        }
        #expect(statements[2].binds.last == .int(2))
        #expect(statements[3].binds.last == .int(10))
        #expect(statements[4].text(for: .postgres).contains("'entitled.events.'"))
        #expect(tail.statements(dialect: .postgres).isEmpty)
        // SQLite: the same writes, without a choice or a lock, into shard 0.
        tail.addMetric(earlier, 1)
        tail.appendEvent(event("e5", "eve"), answerPacked: [], customerID: 5)
        let sqlite = tail.statements(dialect: .sqlite)
        #expect(sqlite.map(\.binds.first) == [.text("Production"), .text("e5")])
        #expect(sqlite[0].text(for: .sqlite).contains("(?, ?, ?, ?, 0, ?)"))
    }

    /// A database of the test's own: on PostgreSQL a new database (so that its
    /// `pg_stat_database` row counts this test's deadlocks only) and an administrative connection.
    static func database(_ backend: Backend) throws -> (TestOwnDatabase, PostgresConnection?) {
        let test = try TestDatabase(backend)
        guard backend == .postgres, var components = URLComponents(string: test.url) else {
            return (TestOwnDatabase(test: test, name: "", url: test.url, schema: nil), nil)
        }
        // Creating and dropping a database copies and syncs files: slow on a busy machine.
        let admin = try PostgresConnection(conninfo: test.url, schema: nil, statementTimeoutMilliseconds: 120_000)
        let name = "hot_" + (test.schema ?? "x")
        try admin.execute("CREATE DATABASE \"\(name)\"")
        components.path = "/" + name
        return (TestOwnDatabase(test: test, name: name, url: components.string ?? test.url, schema: nil), admin)
    }

    static func stats(_ admin: PostgresConnection, database: String) throws -> (backends: Int64, deadlocks: Int64) {
        let row = try admin.query("SELECT numbackends, deadlocks FROM pg_stat_database WHERE datname = $1", .text(database))[0]
        return (try row.int(0), try row.int(1))
    }
}

final class Calls: Sendable {
    let count = Mutex(0)
}

/// A test database with its own name and URL (see ``HotRowLockOrderTests/database(_:)``).
struct TestOwnDatabase {
    var test: TestDatabase
    var name: String
    var url: String
    var schema: String?

    func configuration(fault: FaultInjector?) -> StoreConfiguration {
        var configuration = test.configuration(fault: fault)
        configuration.postgresSchema = schema
        return configuration
    }
}
