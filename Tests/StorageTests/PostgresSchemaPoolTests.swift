import Foundation
import Testing

@testable import Storage

/// A schema from ``PostgresSchemaPool`` must be what migrating a new one gives, or the tests that
/// start from it test another database.
@Suite struct PostgresSchemaPoolTests {
    /// Every row of every table in `schema` (`schema_migrations` without its times; customer
    /// states without the WAL position their trigger stamps) and every sequence's state.
    static func contents(of schema: String, via store: any LedgerStore) async throws -> [String: String] {
        let store = try #require(store as? PostgresStore)
        return try await store.read { session in
            var contents: [String: String] = [:]
            let tables = try session.values("SELECT tablename FROM pg_tables WHERE schemaname = \(schema)", as: String.self)
            for table in tables {
                contents[table] =
                    try session.value(
                        SQLQuery(
                            verbatim: """
                                SELECT COALESCE(string_agg(row, E'\\n' ORDER BY row), '') FROM (
                                    SELECT (to_jsonb(x) - 'commit_lsn' - 'applied_at')::text AS row FROM "\(schema)"."\(table)" x) AS rows
                                """), as: String.self) ?? ""
            }
            for sequence in try session.values("SELECT sequencename FROM pg_sequences WHERE schemaname = \(schema)", as: String.self) {
                contents["sequence " + sequence] =
                    try session.value(
                        SQLQuery(verbatim: "SELECT last_value || ' ' || is_called FROM \"\(schema)\".\"\(sequence)\""), as: String.self) ?? ""
            }
            return contents
        }
    }

    /// Each table's row count and the values of its identity columns: what the same writes must
    /// leave alike in two schemas (new customers take random account tokens, so not every column).
    static func identities(of schema: String, via store: any LedgerStore) async throws -> [String: String] {
        let store = try #require(store as? PostgresStore)
        return try await store.read { session in
            var identities: [String: String] = [:]
            for table in try session.values("SELECT tablename FROM pg_tables WHERE schemaname = \(schema)", as: String.self) {
                let columns = try session.values(
                    """
                    SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = \(schema) AND c.relname = \(table) AND a.attidentity <> '' ORDER BY a.attnum
                    """, as: String.self)
                let listed = columns.map { "COALESCE(string_agg(\"\($0)\"::text, ',' ORDER BY \"\($0)\"), '')" }
                identities[table] =
                    try session.value(
                        SQLQuery(verbatim: "SELECT concat_ws(' ', COUNT(*)\(listed.map { ", " + $0 }.joined())) FROM \"\(schema)\".\"\(table)\""),
                        as: String.self) ?? ""
            }
            return identities
        }
    }

    /// Writes that reach most tables: ingests (customers, facts, projections, jobs, rollups)
    /// and the charts' rollups.
    static func write(_ store: any LedgerStore) async throws {
        for index in 0..<5 {
            _ = try await store.ingest(_StorageCrashBatch.batch(index, now: testNow), projector: testProjector, now: testNow)
        }
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<20, now: testNow)
    }

    static func schemaExists(_ name: String, via store: any LedgerStore) async throws -> Bool {
        try await store.count("SELECT COUNT(*) FROM pg_namespace WHERE nspname = \(name)") == 1
    }

    @Test("a recycled schema holds what a new one holds, and the same writes leave the same rows", arguments: Backend.postgresOnly)
    func recycledIsNew(backend: Backend) async throws {
        let pool = PostgresSchemaPool()
        let used = try TestDatabase(backend)
        let first = try await used.open()
        try await Self.write(first)
        await first.close()
        #expect(await pool.recycle(schema: try #require(used.schema), url: used.url))
        let recycled = try #require(pool.take(url: used.url))
        #expect(recycled != used.schema)
        #expect(pool.take(url: used.url) == nil)

        let new = try TestDatabase(backend)
        let newStore = try await new.open()
        let newSchema = try #require(new.schema)
        #expect(try await !Self.schemaExists(try #require(used.schema), via: newStore))
        #expect(try await Self.contents(of: recycled, via: newStore) == Self.contents(of: newSchema, via: newStore))

        let reused = TestDatabase(backend: backend, url: used.url, schema: recycled, directory: nil)
        let reusedStore = try await reused.open()
        #expect(try await reusedStore.migrate().applied.isEmpty)
        try await Self.write(reusedStore)
        try await Self.write(newStore)
        // Each store folds its rollup journal when it will: both folded, the rows compare.
        try await reusedStore.foldJournal()
        try await newStore.foldJournal()
        let written = try await Self.identities(of: newSchema, via: newStore)
        #expect(try await Self.identities(of: recycled, via: newStore) == written)
        #expect(written["notifications"] == "5 1,2,3,4,5")
        #expect(written["chart_daily"]?.hasPrefix("0") == false)
        await reusedStore.close()
        await newStore.close()
        await reused.destroy()
        await new.destroy()
    }

    @Test(
        "a schema whose catalog is not the migrated one's is dropped, not kept",
        arguments: Backend.postgresOnly, [
            "DROP INDEX facts_app_account_token", "CREATE TABLE extra (x BIGINT)", "ALTER TABLE customers ADD COLUMN extra TEXT",
            "DELETE FROM schema_migrations WHERE version = 47", "DROP TRIGGER customer_states_commit_lsn ON customer_states",
        ])
    func changedIsDropped(backend: Backend, change: String) async throws {
        let pool = PostgresSchemaPool()
        let database = try TestDatabase(backend)
        let store = try await database.open()
        let schema = try #require(database.schema)
        try await store.raw(change)
        #expect(await !pool.recycle(schema: schema, url: database.url))
        #expect(pool.take(url: database.url) == nil)
        #expect(try await !Self.schemaExists(schema, via: store))
        await store.close()
    }

    @Test("a schema migrated part of the way is dropped, not kept", arguments: Backend.postgresOnly)
    func olderIsDropped(backend: Backend) async throws {
        let pool = PostgresSchemaPool()
        let database = try TestDatabase(backend)
        let store = try await database.open(through: 40)
        await store.close()
        #expect(await !pool.recycle(schema: try #require(database.schema), url: database.url))
        #expect(pool.take(url: database.url) == nil)
    }

    @Test("a store left open on a recycled schema no longer reaches it", arguments: Backend.postgresOnly)
    func leftOpenCannotWrite(backend: Backend) async throws {
        let pool = PostgresSchemaPool()
        let database = try TestDatabase(backend)
        let store = try await database.open()
        try await Self.write(store)
        #expect(await pool.recycle(schema: try #require(database.schema), url: database.url))
        let recycled = try #require(pool.take(url: database.url))
        await #expect(throws: (any Error).self) {
            _ = try await store.ingest(_StorageCrashBatch.batch(9, now: testNow), projector: testProjector, now: testNow)
        }
        await store.close()
        let other = try TestDatabase(backend)
        let checker = try await other.open()
        #expect(try await Self.contents(of: recycled, via: checker)["notifications"] == "")
        await checker.close()
        await other.destroy()
        await TestDatabase(backend: backend, url: database.url, schema: recycled, directory: nil).destroy()
    }

    @Test("tables go before the tables they reference")
    func deletionOrder() throws {
        let keys = [("facts", "notifications"), ("links", "customers"), ("customer_states", "customers"), ("customers", "customers")]
            .map { PostgresSchemaPool.ForeignKey(child: $0.0, parent: $0.1) }
        let order = PostgresSchemaPool.deletionOrder(["customers", "customer_states", "facts", "links", "notifications"], keys)
        #expect(Set(order) == ["customers", "customer_states", "facts", "links", "notifications"] && order.count == 5)
        for key in keys where key.child != key.parent {
            let child = try #require(order.firstIndex(of: key.child))
            let parent = try #require(order.firstIndex(of: key.parent))
            #expect(child < parent, "\(key.child) before \(key.parent)")
        }
    }
}
