import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// The rows every ingest shares — the metric rollups, the ingest counters, the outbox lock — are
/// written once per transaction, at its commit, in one global order (``TransactionTail``): group
/// commits of several servers on one PostgreSQL never deadlock on them, and a job
/// rolled back to its savepoint takes its share of them along.
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

    @Test("concurrent group commits of two servers: no deadlock, rollups exact", arguments: Backend.all)
    func concurrentGroupCommits(_ backend: Backend) async throws {
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

        // Rollups: exactly the sum of the accepted ingests' contributions.
        var expected: [String: Int64] = [:]
        for i in succeeded {
            for delta in metricDeltas(facts: Self.batch(i).facts.map(\.fact), policy: Self.projector.policy) {
                expected["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value
            }
        }
        let console = first
        let rollup = try await console.metricRollup(environment: "Production", fromDay: Self.day0 - 10, toDay: Self.day0 + 20)
        #expect(rollup.opening.isEmpty)
        var stored: [String: Int64] = [:]
        for delta in rollup.days { stored["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value }
        #expect(stored == expected.filter { $0.value != 0 })
        #expect(try await first.count("SELECT COUNT(*) FROM metric_daily WHERE value = 0") == 0)
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

    /// The key the commits' shared writes queue on (``TransactionTail``), as a session of the
    /// store's schema computes it.
    static let rollupLock = "hashtextextended('entitled.rollups.' || current_schema(), 0)"

    @Test("two servers' commits queue on the rollups' lock, not on the rows; rollups and charts exact", arguments: Backend.postgresOnly)
    func commitsQueueOnTheRollupLock(_ backend: Backend) async throws {
        let count = 8
        let (database, admin) = try Self.database(backend)
        let adminConnection = try #require(admin)
        var options = database.configuration(fault: nil)
        // One ingest a transaction, so that each waits at its own commit.
        options.postgresGroupCommit = 1
        options.postgresStatementTimeoutMilliseconds = 120_000
        let first = try await openStore(url: database.url, configuration: options)
        let second = try await openStore(url: database.url, configuration: options)
        // One ingest first: the rows every ingest shares before its commit (the signed texts'
        // headers) exist, as they do on a running server, so no transaction waits on another's.
        #expect(try await first.ingest(Self.batch(count), projector: Self.projector, now: testNow).status == .accepted)
        // Another session holds the lock: every commit that writes shared rows must wait for it.
        var holder: PostgresConnection? = try PostgresConnection(conninfo: database.url, schema: nil, statementTimeoutMilliseconds: 120_000)
        _ = try holder?.query("SELECT pg_advisory_lock(\(Self.rollupLock))", [])
        let ingests = Task {
            try await withThrowingTaskGroup(of: Int?.self) { group in
                for i in 0..<count {
                    group.addTask {
                        let result = try await (i % 2 == 0 ? first : second).ingest(Self.batch(i), projector: Self.projector, now: testNow)
                        return result.status == .accepted ? i : nil
                    }
                }
                return try await group.reduce(into: [Int]()) { if let i = $1 { $0.append(i) } }
            }
        }
        // Every ingest's transaction waits on the lock, none on a row, and none has committed.
        let waits = """
            SELECT locktype, COUNT(*) FROM pg_locks WHERE NOT granted
            AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database()) GROUP BY locktype
            """
        var waiting: [String: Int64] = [:]
        let deadline = ContinuousClock.now + .seconds(60)
        while waiting["advisory", default: 0] < Int64(count) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            waiting = Dictionary(uniqueKeysWithValues: try #require(holder).query(waits, []).map { (try $0.text(0), try $0.int(1)) })
        }
        #expect(waiting == ["advisory": Int64(count)])
        #expect(try #require(holder).query("SELECT COUNT(*) FROM notifications", [])[0].int(0) == 1)
        _ = try holder?.query("SELECT pg_advisory_unlock(\(Self.rollupLock))", [])
        holder = nil
        let accepted = try await ingests.value
        #expect(accepted.count == count)

        // Rollups and charts: exactly the sum of the ingests' contributions, read through either store.
        var expected: [String: Int64] = [:]
        var expectedCharts: [String: Int64] = [:]
        for i in accepted + [count] {
            let contribution = metricContribution(facts: Self.batch(i).facts.map(\.fact), policy: Self.projector.policy)
            for delta in contribution.deltas { expected["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value }
            for delta in contribution.charts { expectedCharts[Self.chartKey(delta), default: 0] += delta.value }
        }
        for store in [first, second] {
            let rollup = try await store.metricRollup(environment: "Production", fromDay: Self.day0 - 10, toDay: Self.day0 + 20)
            var stored: [String: Int64] = [:]
            for delta in rollup.days { stored["\(delta.day) \(delta.kind.rawValue) \(delta.currency)", default: 0] += delta.value }
            #expect(stored == expected.filter { $0.value != 0 })
            let charts = try await store.chartRows(
                environments: ["Production"], kinds: ChartKind.allCases, fromDay: Self.day0 - 10, toDay: Self.day0 + 20,
                segments: Set(ChartSegmentation.allCases))
            var storedCharts: [String: Int64] = [:]
            for delta in charts.days { storedCharts[Self.chartKey(delta), default: 0] += delta.value }
            #expect(storedCharts == expectedCharts.filter { $0.value != 0 })
        }
        let report = try await first.rebuild(projector: Self.projector, now: testNow)
        #expect(report.differences == 0)
        await second.close()
        await first.close()
        let deadlineClosed = ContinuousClock.now + .seconds(20)
        while try Self.stats(adminConnection, database: database.name).backends > 0 && ContinuousClock.now < deadlineClosed {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try Self.stats(adminConnection, database: database.name).deadlocks == 0)
        try adminConnection.execute("DROP DATABASE \"\(database.name)\"")
    }

    static func chartKey(_ delta: ChartDelta) -> String {
        "\(delta.day) \(delta.kind.rawValue) \(delta.currency) \(delta.segment.product) \(delta.segment.store) \(delta.segment.storefront) \(delta.segment.periodType) \(delta.offset)"
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
        tail.countMessage(hour: 5, code: "", shard: 1)
        tail.appendEvent(event("e1", "ann"), answerPacked: [], customerID: 1)
        tail.release()
        // A job rolled back to its savepoint: its share goes with it.
        tail.addMetric(earlier, 7)
        tail.appendEvent(event("e2", "bob"), answerPacked: [], customerID: 2)
        tail.rollBack()
        tail.addMetric(earlier, 1)
        tail.addMetric(later, -2)
        tail.countMessage(hour: 5, code: "", shard: 1)
        tail.noteLatest(bundleId: "b", environment: "Production", shard: 1, receivedAt: 10)
        tail.noteLatest(bundleId: "b", environment: "Production", shard: 1, receivedAt: 4)
        tail.appendEvent(event("e3", "cat"), answerPacked: [], customerID: 3)
        tail.appendEvent(event("e4", "dan"), answerPacked: [], customerID: 4)
        tail.dropEvents(customerIDs: [3], appUserIds: ["dan"])
        let statements = tail.statements(dialect: .postgres)
        // The rollups' lock first; `later` summed to nothing: left alone. Then the counters, the
        // outbox lock, the one event left.
        #expect(statements.map(\.binds.first) == [nil, .text("Production"), .int(5), .text("b"), nil, .text("e1")])
        #expect(statements[0].text(for: .postgres).contains("'entitled.rollups.'"))
        #expect(statements[1].binds == [.text("Production"), .int(3), .text("activeSubscriptions"), .text(""), .int(1)])
        #expect(statements[2].binds.last == .int(2))
        #expect(statements[3].binds.last == .int(10))
        #expect(statements[4].text(for: .postgres).contains("'entitled.events.'"))
        #expect(tail.statements(dialect: .postgres).isEmpty)
        // SQLite: the same writes, without the lock.
        tail.appendEvent(event("e5", "eve"), answerPacked: [], customerID: 5)
        #expect(tail.statements(dialect: .sqlite).map(\.binds.first) == [.text("e5")])
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
