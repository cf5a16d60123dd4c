import Entitlements
import Foundation
import Testing

@testable import Storage

/// PostgreSQL's commit path (``PostgresTail``): the batched one stores exactly what the plain one
/// does, in fewer statements and round trips — counted by the connection layer
/// (``PostgresTraffic``), deterministic where rates on a shared machine are noise.
@Suite struct PostgresCommitPathTests {
    static let projector = Projector(
        policy: Policy(products: ["pro.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"])]),
        maintainsMetrics: true, eventHold: EventHold(settleSeconds: 5, maxHoldSeconds: 60))

    /// `entitled bench api`'s notification `index`: a signed transaction and renewal info of a new
    /// subscription bought `daysAgo` days ago with customer `index`'s token (an existing customer:
    /// it links the subscription, recomputes the customer and adds to every rollup).
    static func notification(_ index: Int, daysAgo: Int64 = 1, storefront: String = "USA", bundleId: String = "com.example.bench") -> TestBatch {
        let bought = testNow - daysAgo * day
        let transaction = Fact.transaction(
            TransactionFact(
                transactionId: "t\(index)", originalTransactionId: "o\(index)", productId: "pro.monthly", purchaseDate: bought,
                originalPurchaseDate: bought, expiresDate: bought + 30 * day, productType: .autoRenewable,
                appAccountToken: _StorageBenchmark.appAccountToken(index), signedDate: bought, storefront: storefront,
                transactionReason: .purchase, price: 9990, currency: "USD"))
        let renewal = Fact.renewalInfo(
            RenewalInfoFact(originalTransactionId: "o\(index)", productId: "pro.monthly", autoRenewStatus: true, signedDate: bought))
        return TestBatch(
            message: ReceivedMessage(
                notificationUUID: _StorageBenchmark.appAccountToken(index), source: .appleV2,
                body: Array(#"{"signedPayload":"…"}"#.utf8), receivedAt: testNow + Int64(index) * 600_000,
                notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", bundleId: bundleId),
            facts: [(transaction, Fixture.signed(transaction)), (renewal, Fixture.signed(renewal))], claim: nil)
    }

    /// The traffic of ingesting notifications `range` one at a time (each its own transaction).
    static func traffic(_ store: any LedgerStore, _ range: Range<Int>, projector: Projector = projector) async throws -> PostgresTraffic {
        let counter = try #require((store as? PostgresStore)?.traffic)
        let before = counter.current
        for index in range {
            let result = try await store.ingest(notification(index), projector: projector, now: testNow + Int64(index))
            #expect(result.status == .accepted && result.affectedCustomers == [_StorageBenchmark.appUserId(index)])
        }
        return counter.current - before
    }

    /// A store on a fresh schema with `customers` bench customers, committing the plain or the
    /// batched way, given to `body`.
    static func withBenchStore(
        _ backend: Backend, plain: Bool, customers: Int, connections: Int = 1, rollups: RollupWrites? = nil,
        _ body: (any LedgerStore) async throws -> Void
    ) async throws {
        // No rebuild check afterwards: these customers' products are the bench's, not the test projector's.
        let configure: (inout StoreConfiguration, TestDatabase) -> Void = { options, _ in
            options.postgresConnections = connections
            options.postgresPlainWrites = plain
            options.rollupWrites = rollups
            // Concurrent group commits queue on the same rollup rows; beside every other suite on
            // one shared machine a wait can pass the default 5 s. Timeouts are not under test here.
            options.postgresStatementTimeoutMilliseconds = 60_000
        }
        try await withStore(backend, checksRebuild: false, configure: configure) { store, _ in
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<customers, now: testNow)
            try await body(store)
        }
    }

    @Test("a durable notification: fewer round trips than the plain path, no more statements", arguments: Backend.postgresOnly)
    func perNotification(_ backend: Backend) async throws {
        let count = 40
        var measured: [Bool: PostgresTraffic] = [:]
        for plain in [true, false] {
            // Direct rollup writes: the journal's folds run in the background, when they will.
            try await Self.withBenchStore(backend, plain: plain, customers: 10 + count, rollups: .direct) { store in
                // Every statement text prepared on the connection first; then counted.
                _ = try await Self.traffic(store, 0..<10)
                measured[plain] = try await Self.traffic(store, 10..<(10 + count))
            }
        }
        let (plain, batched) = (try #require(measured[true]), try #require(measured[false]))
        for (name, traffic) in [("plain", plain), ("batched", batched)] {
            print(
                String(
                    format: "PostgreSQL per durable notification, %@: %.2f round trips, %.2f statements (%d prepares in %d)", name,
                    Double(traffic.roundTrips) / Double(count), Double(traffic.statements) / Double(count), traffic.prepares, count))
        }
        #expect(batched.prepares == 0 && plain.prepares == 0)
        // Measured: 13 round trips plain, 8 batched, with the same 27 statements (a
        // rollup's rows are multi-row upserts on both paths). The held writes ride with the
        // statements after them; the shared rows and the outbox go with the commit.
        #expect(batched.roundTrips + 4 * count <= plain.roundTrips)
        #expect(batched.statements <= plain.statements)
    }

    /// Table contents to compare, each row as text, in a stable order (no generated ids). The
    /// shared rows' shards are summed: which shard a commit writes follows which commits overlapped.
    static let contents: [SQLQuery] = [
        "SELECT environment, day, kind, currency, SUM(value) FROM metric_daily GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        """
        SELECT environment, kind, day, currency, store, product, storefront, period_type, month_offset, SUM(value) FROM chart_daily
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
        """,
        "SELECT environment, kind, segmentation, day, currency, month_offset, segment, SUM(value) FROM chart_segment_daily GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7",
        "SELECT hour, code, SUM(count) FROM ingest_hourly GROUP BY hour, code ORDER BY 1, 2",
        "SELECT bundle_id, environment, MAX(received_at) FROM ingest_latest GROUP BY bundle_id, environment ORDER BY 1, 2",
        "SELECT event_id, type, app_user_id, environment, product_id, original_transaction_id, entitlements, details, occurred_at FROM events ORDER BY event_id",
        "SELECT app_user_id, state, projection_rows FROM customer_states ORDER BY app_user_id",
        "SELECT f.kind, f.jws_sha256, n.notification_uuid FROM facts f JOIN notifications n ON n.id = f.notification_id ORDER BY 1, 2",
    ]

    @Test("the batched commit stores exactly what the plain one stores, group commits and events included", arguments: Backend.postgresOnly)
    func batchedStoresWhatPlainStores(_ backend: Backend) async throws {
        // Events at the commit (no hold), rollups of several days, storefronts and apps, hours of
        // ingest counters; every notification twice (the repeats are duplicates).
        let projector = Projector(
            policy: Self.projector.policy, grantEnvironments: nil, maintainsMetrics: true, eventHold: nil, codec: Self.projector.codec)
        let customers = 60
        func batch(_ index: Int) -> TestBatch {
            Self.notification(
                index % customers, daysAgo: Int64(index % 5), storefront: ["USA", "FRA", "JPN"][index % 3],
                bundleId: index % 4 == 0 ? "com.example.other" : "com.example.bench")
        }
        var stored: [Bool: [[[String?]]]] = [:]
        for plain in [true, false] {
            try await Self.withBenchStore(backend, plain: plain, customers: customers, connections: 4) { store in
                // Concurrent: the pool's connections commit groups of several ingests each.
                let outcomes = try await withThrowingTaskGroup(of: IngestResult.Status.self) { group in
                    for index in 0..<(2 * customers) {
                        group.addTask { try await store.ingest(batch(index), projector: projector, now: testNow).status }
                    }
                    return try await group.reduce(into: [IngestResult.Status]()) { $0.append($1) }
                }
                #expect(outcomes.filter { $0 == .accepted }.count == customers)
                try await store.foldJournal()
                var tables: [[[String?]]] = []
                for query in Self.contents { tables.append(try await store.texts(query)) }
                stored[plain] = tables
            }
        }
        let (plain, batched) = (try #require(stored[true]), try #require(stored[false]))
        for (index, query) in Self.contents.enumerated() {
            #expect(!plain[index].isEmpty, "nothing stored by \(query.text(for: .postgres))")
            #expect(batched[index] == plain[index], "\(query.text(for: .postgres))")
        }
    }

    @Test("a held write's error fails its own job, in a group and alone; the other jobs commit", arguments: Backend.postgresOnly)
    func heldWriteErrorIsItsJobs(_ backend: Backend) async throws {
        // One connection: the writes queue behind each other and commit in groups.
        try await Self.withBenchStore(backend, plain: false, customers: 0) { opened in
            let store = try #require(opened as? PostgresStore)
            try await store._execute("CREATE TABLE held_test (id BIGINT PRIMARY KEY, job BIGINT NOT NULL)")
            try await store._execute("INSERT INTO held_test (id, job) VALUES (0, -1)")
            // Each job writes two rows that return nothing (held back); every third one's second
            // row collides with the existing row 0 — an error only the flush at the job's end sees.
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for job in 0..<24 {
                    group.addTask {
                        do {
                            try await store.write { session in
                                try session.query("INSERT INTO held_test (id, job) VALUES (\(Int64(100 + job)), \(Int64(job)))")
                                try session.query("INSERT INTO held_test (id, job) VALUES (\(Int64(job % 3 == 0 ? 0 : 200 + job)), \(Int64(job)))")
                            }
                            return (job, true)
                        } catch let error as StorageError {
                            #expect(error.code == .constraint, "\(error)")
                            return (job, false)
                        } catch {
                            Issue.record("unexpected \(error)")
                            return (job, false)
                        }
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for job in 0..<24 { #expect(outcomes[job] == (job % 3 != 0), "job \(job)") }
            // The failed jobs' first rows went with them; every other job's rows are there.
            let stored = try await store._texts("SELECT job, COUNT(*) FROM held_test WHERE job >= 0 GROUP BY job ORDER BY job")
            #expect(stored == (0..<24).filter { $0 % 3 != 0 }.map { [String($0), "2"] })
        }
    }
}
