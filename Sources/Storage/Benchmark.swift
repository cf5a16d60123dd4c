import Entitlements

/// Not API (`package`: visible to this package's benchmarks and tests, not to library clients):
/// helpers for `entitled bench store` and `bench api`.
package enum _StorageBenchmark {
    /// A synthetic customer's projection: customer number, `appUserId`, `appAccountToken`.
    package typealias SyntheticProjection = @Sendable (_ n: Int, _ appUserId: String, _ appAccountToken: String) -> CustomerProjection

    /// Inserts synthetic customers `user-<n>` for `n` in `range`, each with a projection of one
    /// entitlement and one subscription (or `projection`'s) and its contribution to the metric
    /// rollups (``noMetrics``), in one transaction with prepared inserts.
    package static func bulkLoad(
        _ store: any LedgerStore, customers range: Range<Int>, now: Int64, projection: SyntheticProjection? = nil
    ) async throws {
        switch store {
        case let sqlite as SQLiteStore: try await sqlite.bulkLoad(customers: range, now: now, projection: projection)
        case let postgres as PostgresStore: try await postgres.bulkLoad(customers: range, now: now, projection: projection)
        default: throw StorageError(.invalidArgument, "unsupported store")
        }
    }

    /// A synthetic customer's stored contribution to the metric rollups: none, as it has no facts.
    /// Stored for every seeded customer, as the ingest stores one for every customer, so that a
    /// seeded ledger is a current one: a server started on it finds nothing for its metric
    /// backfill (the one-time pass over customers from before the rollups) to do, and a
    /// benchmark times its requests rather than that pass running beside them.
    static let noMetrics = MetricCodec.encode(StoredMetrics(deltas: [], basis: nil))

    /// Reads every stored customer answer once before reads are timed, as a server that has been
    /// up for a while has: a fresh SQLite reader has not mapped the database file yet (and a
    /// PostgreSQL backend has not read it into its buffers), so at a million customers the first
    /// read of each page would measure a page fault rather than the lookup.
    package static func warm(_ store: any LedgerStore) async throws {
        let sql = "SELECT sum(length(state)) FROM customer_states"
        switch store {
        case let sqlite as SQLiteStore: _ = try await sqlite.read { try $0.query(sql, []) }
        case let postgres as PostgresStore: _ = try await postgres.read { try $0.query(sql, []) }
        default: throw StorageError(.invalidArgument, "unsupported store")
        }
    }

    /// The ledger's own tables (`notifications`, `facts`, `jws_headers`) with their indexes, in
    /// bytes on disk (``relationBytes(_:tables:)``). What `bench store` divides by the
    /// notifications for `bytes per notification`.
    package static func ledgerBytes(_ store: any LedgerStore) async throws -> [(name: String, bytes: Int64)] {
        try await relationBytes(store, tables: ["notifications", "facts", "jws_headers"])
    }

    /// Each table (nil: every table of the schema) and each of its indexes, in bytes on disk:
    /// SQLite's pages of them (`dbstat`, which counts the pages as of the last commit whether they
    /// are in the WAL or the file yet), PostgreSQL's relations after a `VACUUM` (a table's heap with
    /// its TOAST, each index apart).
    package static func relationBytes(_ store: any LedgerStore, tables: [String]?) async throws -> [(name: String, bytes: Int64)] {
        let rows: [RelationSize]
        switch store {
        case let sqlite as SQLiteStore:
            let only: SQLQuery = tables.map { "WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name IN (\(list: $0)))" } ?? ""
            rows = try await sqlite.read { session in
                try session.rows("SELECT name, SUM(pgsize) AS bytes FROM dbstat \(only) GROUP BY name ORDER BY name", as: RelationSize.self)
            }
        case let postgres as PostgresStore:
            let vacuum = tables.map { "VACUUM (ANALYZE) " + $0.joined(separator: ", ") } ?? "VACUUM (ANALYZE)"
            try await postgres.read { try $0.execute(vacuum) }
            let only: SQLQuery = tables.map { "AND c.relname IN (\(list: $0))" } ?? ""
            rows = try await postgres.read { session in
                try session.rows(
                    """
                    SELECT c.relname AS name, pg_total_relation_size(c.oid) - pg_indexes_size(c.oid) AS bytes FROM pg_class c
                    JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = current_schema() AND c.relkind = 'r' \(only)
                    UNION ALL
                    SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid) FROM pg_index i
                    JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = current_schema() AND c.relkind = 'r' \(only)
                    ORDER BY 1
                    """, as: RelationSize.self)
            }
        default: throw StorageError(.invalidArgument, "unsupported store")
        }
        return rows.map { ($0.name, $0.bytes) }
    }

    /// The `appUserId` of synthetic customer `n`.
    package static func appUserId(_ n: Int) -> String { "user-\(n)" }

    /// The `appAccountToken` of synthetic customer `n` (a valid UUID, lowercase).
    package static func appAccountToken(_ n: Int) -> String { "00000000-0000-4000-8000-" + String(n).leftPadded(12) }

    /// Database size in bytes (SQLite: file + WAL; PostgreSQL: the schema's relations).
    package static func databaseBytes(_ store: any LedgerStore) async throws -> Int64 {
        switch store {
        case let sqlite as SQLiteStore: return try await sqlite.databaseBytes()
        case let postgres as PostgresStore: return try await postgres.databaseBytes()
        default: throw StorageError(.invalidArgument, "unsupported store")
        }
    }
}

/// Not API (`package`): the batches `entitled _storage-crash-child` ingests and the crash tests check, one
/// definition for both.
package enum _StorageCrashBatch {
    /// Batch `index`: a notification with a transaction and a renewal for subscription `c<index>`
    /// (a product of its own, so each is its own subscription group with its own projection row),
    /// claimed by one of 16 customers.
    package static func batch(_ index: Int, now: Int64)
        -> (message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim)
    {
        let otid = "c\(index)"
        let transaction = TransactionFact(
            transactionId: "t\(index)", originalTransactionId: otid, productId: "pro.\(index)", purchaseDate: now - 86_400_000,
            expiresDate: now + Int64(index % 7 - 3) * 86_400_000, productType: .autoRenewable, signedDate: now,
            environment: .sandbox)
        let renewal = RenewalInfoFact(
            originalTransactionId: otid, productId: "pro.\(index)", autoRenewStatus: index % 2 == 1, signedDate: now,
            environment: .sandbox)
        return (
            ReceivedMessage(
                notificationUUID: "crash-\(index)", source: .simulator, body: Array("crash-\(index)".utf8), receivedAt: now,
                notificationType: "SUBSCRIBED"),
            [(.transaction(transaction), "jws.t\(index)"), (.renewalInfo(renewal), "jws.r\(index)")],
            Claim(appUserId: "crash-user-\(index % 16)", behaviour: .transfer)
        )
    }

    /// `entitled _storage-crash-child`'s work: ingests batches `0..<count` with `concurrency`
    /// workers and the basic projector (the tests rebuild with the same one) at `now`, calling
    /// `acknowledged` with each batch's notification UUID and status once committed; runs until
    /// done or killed.
    package static func run(
        url: String, postgresSchema: String?, count: Int, concurrency: Int, now: Int64,
        acknowledged: @escaping @Sendable (String, IngestResult.Status) -> Void
    ) async throws {
        var configuration = StoreConfiguration()
        configuration.postgresSchema = postgresSchema
        let store = try await openStore(url: url, configuration: configuration)
        let projector = Projector()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var index = worker
                    while index < count {
                        let batch = batch(index, now: now)
                        let result = try await store.ingest(
                            batch.message, facts: batch.facts, claim: batch.claim, projector: projector, now: now)
                        acknowledged(batch.message.notificationUUID ?? "", result.status)
                        index += concurrency
                    }
                }
            }
            try await group.waitForAll()
        }
        await store.close()
    }
}

extension Ledger {
    /// Synthetic customers for benchmarks: sequential ids, tokens and keys so the load is fast.
    func bulkLoadSynthetic(_ range: Range<Int>, now: Int64, projection custom: _StorageBenchmark.SyntheticProjection?) throws {
        for n in range {
            let user = _StorageBenchmark.appUserId(n)
            let token = _StorageBenchmark.appAccountToken(n)
            guard
                let id = try session.value(
                    "INSERT INTO customers (app_user_id, app_account_token, created_at) VALUES (\(user), \(token), \(now)) RETURNING id",
                    as: Int64.self)
            else { throw StorageError(.internal, "synthetic customer not stored") }
            let otid = "2000000\(n)"
            let expires = now + Int64(n % 720) * 3_600_000
            let projection = custom?(n, user, token) ?? CustomerProjection(
                entitlements: [
                    EntitlementRow(
                        entitlement: "pro", status: "active", active: true, productId: "com.example.pro.monthly",
                        originalTransactionId: otid, expiresAt: expires, graceUntil: nil, willRenew: true,
                        environment: "Production")
                ],
                subscriptions: [
                    SubscriptionRow(
                        originalTransactionId: otid, productId: "com.example.pro.monthly", group: "pro", status: "active",
                        expiresAt: expires, graceUntil: nil, autoRenew: true, environment: "Production")
                ],
                state: Array(
                    #"{"appUserId":"\#(user)","entitlements":[{"active":true,"entitlement":"pro","expiresAt":\#(expires),"productId":"com.example.pro.monthly"}]}"#
                        .utf8))
            try write(projection, for: CustomerRecord(id: id, appUserId: user, appAccountToken: token, createdAt: now), now: now, previous: CustomerProjection(entitlements: [], subscriptions: [], state: []))
            try session.query("INSERT INTO customer_metrics (customer_id, deltas) VALUES (\(id), \(_StorageBenchmark.noMetrics))")
        }
    }
}

/// A table's or index's bytes on disk.
private struct RelationSize: Decodable {
    var name: String
    var bytes: Int64
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

/// Not API (`package`): ledger rows written as given, for the tests of how the ledger meets rows
/// this binary would not write (an older binary's encoding, a damaged row).
package enum _StorageFixtures {
    /// Inserts one fact row, keyed by the digest of `signed` like any other, with no notification.
    package static func insertFactRow(
        _ store: any LedgerStore, kind: String, signed: String, payload: String, transactionId: String? = nil,
        originalTransactionId: String?, appAccountToken: String? = nil, environment: String = "Production",
        bundleId: String? = nil, signedDate: Int64, receivedAt: Int64
    ) async throws {
        guard let store = store as? any SessionBackedStore else { throw StorageError(.invalidArgument, "unsupported store") }
        try await store.write { session in
            _ = try session.query(
                """
                INSERT INTO facts (notification_id, \(LedgerCodes.column("kind", dialect: session.dialect)), jws_sha256, jws, payload, transaction_id,
                                   original_transaction_id, app_account_token, \(LedgerCodes.column("environment", dialect: session.dialect)), bundle_id,
                                   signed_date, received_at)
                VALUES (NULL, \(LedgerCodes.value(kind, in: LedgerCodes.kinds, dialect: session.dialect)), \(FactDigest.stored(FactDigest.hex(signed))), \(signed), \(payload), \(transactionId), \(originalTransactionId), \(appAccountToken), \(LedgerCodes.value(environment, in: LedgerCodes.environments, dialect: session.dialect)), \(bundleId), \(signedDate), \(receivedAt))
                """)
        }
    }
}

extension _StorageBenchmark {
    /// The accepted notifications in the ledger (`bench api` waits for its ingest with it).
    package static func notificationCount(_ store: any LedgerStore) async throws -> Int64 {
        guard let store = store as? any SessionBackedStore else { throw StorageError(.invalidArgument, "unsupported store") }
        return try await store.read { try $0.value("SELECT count(*) FROM notifications", as: Int64.self) ?? 0 }
    }

    /// What a customer read costs the primary with `readYourWrites: allServers`.
    package enum CustomerReadStep: Sendable {
        /// The customer's stamp and the primary's position (``ReplicaNeed/lookup(_:appUserId:)``).
        case stampLookup
        /// The customer answer itself (what a replica, or the primary, then serves).
        case answer
    }

    /// Runs `step` for `count` random customers of `user-0` … `user-(customers-1)`, one after
    /// another on one PostgreSQL connection, and returns the seconds it took.
    package static func time(_ step: CustomerReadStep, _ store: any LedgerStore, customers: Int, count: Int) async throws -> Double {
        guard let store = store as? PostgresStore else { throw StorageError(.invalidArgument, "not a PostgreSQL store") }
        return try await store.read { session in
            let started = ContinuousClock.now
            for _ in 0..<count {
                let user = "user-\(Int.random(in: 0..<max(1, customers)))"
                switch step {
                case .stampLookup: _ = try ReplicaNeed.lookup(session, appUserId: user)
                case .answer: _ = try Ledger(session: session, fault: nil).projection(appUserId: user)
                }
            }
            let elapsed = (ContinuousClock.now - started).components
            return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        }
    }

    /// The process id of one of a PostgreSQL store's server backends (`pg_backend_pid()`).
    package static func backendPID(_ store: any LedgerStore) async throws -> Int32 {
        guard let store = store as? PostgresStore else { throw StorageError(.invalidArgument, "not a PostgreSQL store") }
        return Int32(try await store.read { try $0.value("SELECT pg_backend_pid()", as: Int64.self) ?? 0 })
    }
}

/// Not API (`package`): drops a benchmark's PostgreSQL schema.
package enum _StorageBenchmarkCleanup {
    /// Drops `schema` (PostgreSQL only; letters, digits and `_`).
    package static func dropSchema(_ store: any LedgerStore, _ schema: String) async throws {
        guard let postgres = store as? PostgresStore,
            schema.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        else { return }
        try await postgres._execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }
}

extension _StorageBenchmark {
    /// Gives synthetic customers `range` (already bulk-loaded) a contribution to the metric rollups,
    /// as if each had subscribed on one of the 730 days before `now` and renewed every 30 days for
    /// 1–13 periods: their `customer_metrics` rows (in place of the empty ones they were loaded
    /// with) and the summed `metric_daily` rows, in one transaction (`entitled bench console`).
    package static func bulkLoadMetrics(_ store: any LedgerStore, customers range: Range<Int>, now: Int64) async throws {
        guard let store = store as? any SessionBackedStore else { throw StorageError(.invalidArgument, "unsupported store") }
        try await store.write { session in
            let today = metricDay(now)
            var daily: [MetricRowKey: Int64] = [:]
            let ids = try session.values(
                "SELECT id FROM customers ORDER BY id", as: Int64.self)
            for (index, n) in range.enumerated() where index < ids.count {
                let start = today - Int64(n % 730)
                let end = start + 30 * Int64(1 + n % 13)
                let (currency, price): (String, Int64) = n % 3 == 0 ? ("EUR", 8990) : ("USD", 9990)
                var deltas = [
                    MetricDelta(environment: .production, day: start, kind: .activeSubscriptions, value: 1),
                    MetricDelta(environment: .production, day: start, kind: .mrr, currency: currency, value: price),
                    MetricDelta(environment: .production, day: start, kind: .newSubscriptions, value: 1),
                ]
                var renewal = start + 30
                while renewal < min(end, today + 1) {
                    deltas.append(MetricDelta(environment: .production, day: renewal, kind: .renewals, value: 1))
                    renewal += 30
                }
                if end <= today {
                    deltas.append(MetricDelta(environment: .production, day: end, kind: .activeSubscriptions, value: -1))
                    deltas.append(MetricDelta(environment: .production, day: end, kind: .mrr, currency: currency, value: -price))
                    deltas.append(MetricDelta(environment: .production, day: end, kind: .churned, value: 1))
                }
                for delta in deltas { daily[MetricRowKey(delta), default: 0] += delta.value }
                try session.query(
                    "INSERT INTO customer_metrics (customer_id, deltas) VALUES (\(ids[index]), \(MetricCodec.encode(StoredMetrics(deltas: deltas, basis: nil)))) ON CONFLICT (customer_id) DO UPDATE SET deltas = excluded.deltas")
            }
            // Written at the commit, as the ingest's rollups are.
            for (key, value) in daily { session.tail.addMetric(key, value) }
        }
    }
}
