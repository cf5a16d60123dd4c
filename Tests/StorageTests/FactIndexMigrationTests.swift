import Entitlements
import Testing

@testable import Storage

/// Schema versions 46 and 47 on a ledger as schema 45 left it: on PostgreSQL the facts' tokens
/// indexed through a hash index (``Schema/factTokenHashIndex``), and on both the index of
/// transaction ids without the notification facts (``Schema/transactionIdsWithoutNotifications``).
/// Every fact is found by its token and transaction id as before, through those indexes.
@Suite("Schemas 46 and 47: fact tokens through a hash index, transaction ids without the notifications'")
struct FactIndexMigrationTests {
    typealias Legacy = RepackMigrationTests.Legacy

    /// Every transaction id of the fixture (each a transaction fact's, and a notification fact's
    /// but for the client post's), and one it does not hold.
    static let transactionIds = Legacy.customers.indices.map { "t-o-\($0)" } + ["t-o-client", "t-none"]

    @Test("a schema-45 ledger finds every fact by token and transaction id, through the new indexes", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            try await database.restore(.ledgerV15)
            let old = try await database.open(through: 45)
            #expect(try await old.count("SELECT MAX(version) FROM schema_migrations") == 45)
            let before = try await Self.lookups(old)
            #expect(before.known == Set(Self.transactionIds.dropLast()))
            #expect(before.owners["t-o-3"] == ["c-3"] && before.owners["t-o-client"] == ["c-0"] && before.owners["t-none"] == [])
            await old.close()

            let store = try await database.open()
            #expect(try await Self.lookups(store) == before)
            let report = try await store.compareProjections(projector: testProjector)
            #expect(report.differences == 0 && report.failedCustomers.isEmpty)

            // The indexes as the migrations made them, and the lookups read through them.
            if backend == .postgres {
                #expect(
                    try await store.count(
                        """
                        SELECT COUNT(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                        JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = current_schema() AND c.relname = 'facts_app_account_token' AND a.amname = 'hash'
                            AND i.indpred IS NOT NULL
                        """) == 1)
                #expect(
                    try await store.count(
                        """
                        SELECT COUNT(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = current_schema() AND c.relname = 'facts_transaction_id'
                            AND pg_get_expr(i.indpred, i.indrelid) LIKE '%notification%'
                        """) == 1)
            } else {
                #expect(
                    try await store.count(
                        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'facts_transaction_id' AND sql LIKE '%kind <> ''notification''%'") == 1)
            }
            // Each plan is in the failure's message: which index the planner took instead says why.
            let byTransaction = try await Self.plan(store, "SELECT 1 FROM facts WHERE \(Ledger.carrying(transactionId: "t-o-1"))")
            #expect(byTransaction.contains("facts_transaction_id"), "\(byTransaction)")
            // A new customer's search for the facts that arrived with its token before it.
            let token = Legacy.token(1)
            let byToken = try await Self.plan(
                store, "SELECT DISTINCT original_transaction_id FROM facts WHERE app_account_token = \(token) AND original_transaction_id IS NOT NULL")
            #expect(byToken.contains("facts_app_account_token"), "\(byToken)")
            await store.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }

    /// What the console finds for each of ``transactionIds``: which the ledger holds, and whose they are.
    struct Lookups: Equatable {
        var known: Set<String>
        var owners: [String: [String]]
    }

    static func lookups(_ store: any LedgerStore) async throws -> Lookups {
        let console = store as any ConsoleStore
        var owners: [String: [String]] = [:]
        for id in transactionIds { owners[id] = try await console.exactCustomers([id]).map(\.appUserId) }
        return Lookups(known: try await console.knownTransactions(transactionIds), owners: owners)
    }

    /// The database's plan for `query`, as text. PostgreSQL plans it as if scanning a table were
    /// dear: the fixture's tables are a few rows, which a scan reads faster than an index.
    static func plan(_ store: any LedgerStore, _ query: SQLQuery) async throws -> String {
        let store = try #require(store as? any SessionBackedStore)
        return try await store.read { session in
            guard session.dialect == .postgres else {
                return try session.rows("EXPLAIN QUERY PLAN \(query)", as: PlanStep.self).map(\.detail).joined(separator: "\n")
            }
            try session.execute("SET enable_seqscan = off")
            defer { try? session.execute("RESET enable_seqscan") }
            return try session.values("EXPLAIN \(query)", as: String.self).joined(separator: "\n")
        }
    }

    struct PlanStep: Decodable {
        var detail: String
    }
}
