import Foundation
import Synchronization

/// The PostgreSQL ledger, for several stateless `entitled` replicas sharing one database.
///
/// A pool of ``StoreConfiguration/postgresConnections`` worker threads, each owning one libpq
/// connection (libpq blocks, so it stays off Swift's cooperative pool). Workers take jobs from one
/// queue. A worker that takes a write also takes the writes queued behind it and commits them in
/// one transaction, a `SAVEPOINT` each (group commit, as on SQLite). On a serialization failure or
/// deadlock the whole group is rolled back and retried; after a lost connection (server restart)
/// the worker reconnects and retries once — safe because every write is idempotent
/// (unique notification UUIDs, unique facts, `ON CONFLICT DO NOTHING`).
final class PostgresStore: SessionBackedStore {
    private let conninfo: String
    let configuration: StoreConfiguration
    private let queue: JobQueue
    private let threads = ThreadTracker()
    let rollupFolder: RollupFolder
    /// Reads on streaming replicas; nil without `postgresReplicas`.
    private let replicas: ReplicaReads?
    /// What the primary's connections sent and waited for.
    let traffic = PostgresTraffic.Counter()

    private init(conninfo: String, configuration: StoreConfiguration) {
        self.conninfo = conninfo
        self.configuration = configuration
        rollupFolder = RollupFolder(delay: configuration.rollupFoldDelay)
        let queue = JobQueue()
        self.queue = queue
        replicas =
            configuration.postgresReplicas.isEmpty
            ? nil : ReplicaReads(urls: configuration.postgresReplicas, primary: queue, configuration: configuration)
    }

    static func open(uri: String, configuration: StoreConfiguration) async throws -> PostgresStore {
        if let schema = configuration.postgresSchema {
            let allowed = schema.unicodeScalars.allSatisfy { ($0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || $0 == "_") }
            guard !schema.isEmpty, schema.count <= 63, allowed else {
                throw StorageError(.invalidArgument, "postgresSchema must be lowercase letters, digits and _")
            }
        }
        let store = PostgresStore(conninfo: uri, configuration: configuration)
        store.startFolding()
        store.startWorkers()
        do {
            if configuration.migrateOnOpen {
                _ = try await store.migrate()
            } else if !configuration.skipSchemaCheck {
                _ = try await store.write { try Schema.check($0) }
            }
            if let position = store.replicas?.position {
                // Replicas serve this process only once they have what the primary has now, so a
                // restarted process does not read older data than before.
                try await store.write { try position.advance(reading: $0) }
            }
        } catch {
            await store.close()
            throw error
        }
        store.foldLeftRows(.postgres)
        return store
    }

    // MARK: Workers

    private func startWorkers() {
        let count = max(1, configuration.postgresConnections)
        for index in 0..<count {
            let queue = self.queue
            let conninfo = self.conninfo
            let configuration = self.configuration
            let position = replicas?.position
            let traffic = self.traffic
            let journal = self.journal(.postgres)
            threads.start(name: "entitled.postgres.\(index)") {
                var connection: PostgresConnection? = nil
                while let jobs = queue.take(maxWrites: max(1, configuration.postgresGroupCommit), groupReads: false) {
                    Self.run(
                        jobs, connection: &connection, conninfo: conninfo, configuration: configuration, position: position,
                        traffic: traffic, journal: journal)
                }
            }
        }
    }

    private static func run(
        _ jobs: [any StorageJob], connection: inout PostgresConnection?, conninfo: String, configuration: StoreConfiguration,
        position: CommitPosition?, traffic: PostgresTraffic.Counter, journal: RollupFolder?
    ) {
        var attempts = 0
        var reconnected = false
        while true {
            do {
                if connection == nil || connection?.isHealthy == false {
                    if let existing = connection { try existing.connect() } else {
                        connection = try Self.connection(conninfo, configuration, traffic)
                    }
                    connection?.tail.journal = journal
                }
                guard let session = connection else { throw StorageError(.unavailable) }
                var late: [Int: any Error] = [:]
                if jobs[0].isWrite {
                    do {
                        late = try commitGroup(
                            jobs, on: session, fault: configuration.faultInjector,
                            writing: configuration.postgresPlainWrites ? .plain : .batched)
                        // Committed: a failure to read the position only costs this group's
                        // readers a trip to the primary later (the next commit advances it).
                        if let position { try? position.advance(reading: session) }
                    } catch let error as StorageError where jobs.count == 1 && error.retry == .none {
                        // A lone job that failed on its own: it keeps its own error.
                        jobs[0].finish(overriding: jobs[0].failure ?? error)
                        return
                    }
                } else {
                    for job in jobs where !job.perform(session) {
                        if let error = job.failure as? StorageError, error.retry != .none { throw error }
                    }
                }
                for (index, job) in jobs.enumerated() { job.finish(overriding: late[index]) }
                if jobs[0].isWrite { configuration.ledgerObserver?.groupCommitted(writes: jobs.count) }
                return
            } catch let error as StorageError where error.retry == .reconnect && !reconnected {
                // The server went away (restart, failover, network). Reconnect — trying for up to
                // about 3 s, long enough for a restart — then run the work once more. A server that
                // does not answer at all is not waited for longer than one connect timeout.
                // The pauses between attempts sleep this worker's own thread (never the cooperative
                // pool): it has nothing else to do meanwhile — its connection is gone and its group
                // waits for it — while the other workers keep taking jobs. They are bounded (3 s in
                // all), and a close meanwhile waits at most that long.
                reconnected = true
                let started = DispatchTime.now().uptimeNanoseconds
                var lastError: any Error = error
                var back = false
                for delay in [0, 100_000, 200_000, 400_000, 800_000, 1_500_000] as [UInt32] {
                    guard DispatchTime.now().uptimeNanoseconds - started < 3_000_000_000 else { break }
                    usleep(delay)
                    do {
                        if let existing = connection { try existing.connect() } else {
                            connection = try Self.connection(conninfo, configuration, traffic)
                        }
                        back = true
                        break
                    } catch {
                        lastError = error
                        if let storage = error as? StorageError, storage.retry == .none { break }
                    }
                }
                if !back {
                    for job in jobs { job.finish(overriding: lastError) }
                    return
                }
                continue
            } catch let error as StorageError where error.retry == .transaction && jobs.count > 1 {
                // The shared rows are locked in one global order at the commit (TransactionTail),
                // but jobs of one group lock their customers in no global order, so two groups
                // working on the same two customers can still deadlock. Retry each job in a
                // transaction of its own: a lone ingest takes its locks in sorted order, so these
                // rarely meet again.
                for job in jobs {
                    run(
                        [job], connection: &connection, conninfo: conninfo, configuration: configuration, position: position,
                        traffic: traffic, journal: journal)
                }
                return
            } catch let error as StorageError where error.retry == .transaction && attempts + 1 < configuration.postgresTransactionAttempts {
                attempts += 1
                // Back off a little, with jitter, so the transactions that deadlocked don't meet again
                // (a few ms on this worker's own thread, which must run this group again anyway).
                usleep(UInt32.random(in: 1_000...5_000) * UInt32(attempts))
                continue
            } catch {
                for job in jobs { job.finish(overriding: error) }
                return
            }
        }
    }

    private static func connection(
        _ conninfo: String, _ configuration: StoreConfiguration, _ traffic: PostgresTraffic.Counter
    ) throws -> PostgresConnection {
        try PostgresConnection(
            conninfo: conninfo, schema: configuration.postgresSchema, traffic: traffic,
            statementTimeoutMilliseconds: configuration.postgresStatementTimeoutMilliseconds,
            connectTimeoutSeconds: configuration.postgresConnectTimeoutSeconds)
    }

    /// Transaction control rides along with the statements around it (`BEGIN; SAVEPOINT`,
    /// `RELEASE; SAVEPOINT`, `RELEASE; COMMIT`), so savepoints cost no extra round trips. Batched
    /// (``PostgresTail``), writes that return nothing are held back and sent with the next
    /// statement that needs an answer; in a group, each job's are sent at its end with its
    /// savepoint's release, so that their errors are the job's own. Returns the jobs that failed
    /// that way (their bodies had returned), by index.
    private static func commitGroup(
        _ jobs: [any StorageJob], on session: PostgresConnection, fault: FaultInjector?, writing: PostgresTail
    ) throws -> [Int: any Error] {
        let single = jobs.count == 1
        // BEGIN and the savepoints ride along with each job's first statement (deferred).
        if single { session.defer("BEGIN") } else { session.defer("BEGIN", "SAVEPOINT ingest") }
        session.tail.begin()
        session.holdsWrites = writing == .batched
        defer { session.holdsWrites = false }
        var late: [Int: any Error] = [:]
        do {
            for (index, job) in jobs.enumerated() {
                let next = index < jobs.count - 1 ? ["RELEASE SAVEPOINT ingest", "SAVEPOINT ingest"] : ["RELEASE SAVEPOINT ingest"]
                var failure: (any Error)? = job.perform(session) ? nil : job.failure ?? StorageError(.internal)
                if failure == nil && !single {
                    do {
                        try session.flushHeldWrites(then: next)
                    } catch {
                        failure = error
                        late[index] = error
                    }
                }
                guard let failure else {
                    session.tail.release()
                    continue
                }
                if let error = failure as? StorageError, error.retry != .none { throw error }
                if !session.isHealthy { throw failure }
                // A lone job's failure is its group's failure; otherwise undo just this job.
                if single { throw failure }
                session.discardHeldWrites()
                try session.execute("ROLLBACK TO SAVEPOINT ingest")
                session.tail.rollBack()
                session.defer(next)
            }
            if let fault { try Ledger(session: session, fault: fault).inject(.beforeCommit) }
            // The shared rows and the outbox lock, once, in the global lock order (TransactionTail),
            // and the commit.
            try writing.commit(session.tail, on: session)
        } catch {
            session.discardHeldWrites()
            if session.isHealthy { try? session.execute("ROLLBACK") }
            throw error
        }
        return late
    }

    private func submit<T: Sendable>(
        isWrite: Bool, on target: JobQueue, need: ReplicaNeed? = nil, _ body: @escaping @Sendable (any SQLSession) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job(isWrite: isWrite, replicaNeed: need, body: body, continuation: continuation)
            if !target.enqueue(job) { job.finish(overriding: StorageError(.closed, "the store is closed")) }
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await submit(isWrite: true, on: queue, body)
    }

    /// On a replica that has replayed this process's last commit when there is one (``ReplicaReads``).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await submit(isWrite: false, on: replicas?.queue ?? queue, body)
    }

    /// With ``ReadYourWrites/allServers``, first the customer's stamp on the primary
    /// (``ReplicaNeed/lookup(_:appUserId:)``), then a replica that has that write, else the primary.
    func read<T: Sendable>(customer appUserId: String, _ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        guard let replicas, configuration.readYourWrites == .allServers else { return try await read(body) }
        guard let need = try await submit(isWrite: false, on: queue, { try ReplicaNeed.lookup($0, appUserId: appUserId) }) else {
            configuration.ledgerObserver?.readsRouted(1, onReplica: false)
            return try await submit(isWrite: false, on: queue, body)
        }
        return try await submit(isWrite: false, on: replicas.queue, need: need, body)
    }

    /// The primary only: `/readyz` tells whether the primary answers, whatever the replicas do.
    func ping() async throws {
        _ = try await submit(isWrite: false, on: queue) { try $0.query("SELECT 1") }
    }

    // MARK: LedgerStore

    var faultInjector: FaultInjector? { configuration.faultInjector }
    var ledgerObserver: (any LedgerObserver)? { configuration.ledgerObserver }
    /// Customers per rebuild transaction (smaller: each holds row locks on the server).
    var rebuildChunk: Int { 200 }

    func migrate() async throws -> MigrationReport {
        let stamp = ISO8601DateFormatter().string(from: Date())
        let (schema, through) = (configuration.postgresSchema, configuration.migrateThrough)
        let (report, pending) = try await write { session in
            // Waiting for another replica's migration, or rewriting a large table, may take longer
            // than any request should: no statement timeout here.
            let migrate = {
                // Serializes migrators across processes until this transaction commits.
                try session.query("SELECT pg_advisory_xact_lock(7245001)")
                if let schema { try session.execute("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"") }
                let report = try Schema.migrate(session, appliedAt: stamp, through: through)
                return (report, try Schema.pendingRepack(session, version: report.currentVersion))
            }
            guard let connection = session as? PostgresConnection else { return try migrate() }
            return try connection.withoutStatementTimeout(migrate)
        }
        try await repackLegacyRows(pending: pending)
        return report
    }

    func close() async {
        await rollupFolder.close()
        // Replica workers hand reads they cannot serve to the primary's queue: close theirs first.
        await replicas?.close()
        queue.close()
        await threads.waitForAll()
        if configuration.recyclesSchema, let schema = configuration.postgresSchema {
            await PostgresSchemaPool.shared.recycle(schema: schema, url: conninfo)
        }
    }

    // MARK: Bench and test support

    /// Same rows as ``Ledger/bulkLoadSynthetic(_:now:)``, but set-based: a few statements instead
    /// of one round trip per row.
    func bulkLoad(customers range: Range<Int>, now: Int64, projection: _StorageBenchmark.SyntheticProjection? = nil) async throws {
        guard !range.isEmpty else { return }
        if let projection {
            // Custom projections are computed in Swift: one row at a time.
            try await write { session in
                try Ledger(session: session, fault: nil).bulkLoadSynthetic(range, now: now, projection: projection)
            }
            return
        }
        let first = Int64(range.lowerBound)
        let last = Int64(range.upperBound - 1)
        let stamp = now
        try await write { session in
            try session.query(
                """
                INSERT INTO customers (app_user_id, app_account_token, created_at)
                SELECT 'user-' || g, '00000000-0000-4000-8000-' || lpad(g::text, 12, '0'), \(stamp)::bigint
                FROM generate_series(\(first)::bigint, \(last)::bigint) AS g
                """)
            let mapped: SQLQuery = "FROM generate_series(\(first)::bigint, \(last)::bigint) AS g JOIN customers c ON c.app_user_id = 'user-' || g"
            // The same state document and encoded rows (see RowCodec) that the Swift path writes.
            try session.query(
                """
                INSERT INTO customer_states (app_user_id, customer_id, app_account_token, created_at, state, projection_rows, computed_at)
                SELECT c.app_user_id, c.id, c.app_account_token, c.created_at,
                    '{"appUserId":"' || c.app_user_id || '","entitlements":[{"active":true,"entitlement":"pro","expiresAt":'
                        || x.expires || ',"productId":"com.example.pro.monthly"}]}',
                    'E3:pro6:active1:123:com.example.pro.monthly' || length(x.otid) || ':' || x.otid
                        || length(x.expires::text) || ':' || x.expires || '~1:110:Production'
                        || 'S' || length(x.otid) || ':' || x.otid || '23:com.example.pro.monthly3:pro6:active'
                        || length(x.expires::text) || ':' || x.expires || '~1:110:Production',
                    \(stamp)::bigint
                FROM generate_series(\(first)::bigint, \(last)::bigint) AS g
                JOIN customers c ON c.app_user_id = 'user-' || g
                CROSS JOIN LATERAL (SELECT '2000000' || g AS otid, \(stamp)::bigint + (g % 720) * 3600000 AS expires) AS x
                """)
            try session.query(
                """
                INSERT INTO entitlement_projections (customer_id, entitlement, environment, status, active, product_id,
                    original_transaction_id, expires_at, grace_until, will_renew)
                SELECT c.id, 'pro', 'Production', 'active', 1, 'com.example.pro.monthly', '2000000' || g,
                    \(stamp)::bigint + (g % 720) * 3600000, NULL, 1
                \(mapped)
                """)
            try session.query(
                """
                INSERT INTO subscription_projections (original_transaction_id, customer_id, product_id, group_id, status,
                    expires_at, grace_until, auto_renew, environment)
                SELECT '2000000' || g, c.id, 'com.example.pro.monthly', 'pro', 'active', \(stamp)::bigint + (g % 720) * 3600000,
                    NULL, 1, 'Production'
                \(mapped)
                """)
            try session.query("INSERT INTO customer_metrics (customer_id, deltas) SELECT c.id, \(_StorageBenchmark.noMetrics) \(mapped)")
            // The loaded tables of this schema only: a bare ANALYZE reads every table of every
            // schema in the database (the test suites' many), and waits on each one's vacuum.
            try session.execute("ANALYZE customers, customer_states, entitlement_projections, subscription_projections, customer_metrics")
        }
    }

    func databaseBytes() async throws -> Int64 {
        try await read { session in
            try session.value(
                """
                SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'
                """, as: Int64.self) ?? 0
        }
    }

    /// Test support: runs raw SQL in a write transaction.
    func _execute(_ sql: String) async throws {
        try await write { try $0.execute(sql) }
    }

    /// Test support: the first column of the first row of a query, as an integer.
    func _scalar(_ query: SQLQuery) async throws -> Int64 {
        try await read { try $0.value(query, as: Int64?.self).flatMap { $0 } ?? 0 }
    }
}
