import Entitlements
import Testing

@testable import Storage

/// Schema version 38 on a database an older version wrote: every fact's key rewritten as its
/// digest's 32 bytes and the indexes on `transaction_id` and `app_account_token` made partial;
/// every text, answer and replay the same.
@Suite("Schema 38: fact keys as bytes, partial fact indexes")
struct FactKeyMigrationTests {
    typealias Legacy = RepackMigrationTests.Legacy

    @Test("every key becomes its digest's bytes; texts, answers and replays stay", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            try await database.restore(.ledgerV15)
            let reader = try await database.open(migrate: false)
            #expect(try await reader.count("SELECT COUNT(*) FROM facts WHERE LENGTH(jws_sha256) = 64") == Int64(Legacy.texts.count))
            await reader.close()

            let store = try await database.open()
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE LENGTH(jws_sha256) <> 32") == 0)
            for text in Legacy.texts {
                #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored(FactDigest.hex(text)))") == 1)
            }
            let partial: SQLQuery =
                backend == .postgres
                // The catalog itself, not `pg_indexes`: its `pg_get_indexdef` would read every
                // schema's indexes, some of them being rebuilt by the tests running beside this one.
                ? """
                SELECT COUNT(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = current_schema() AND i.indpred IS NOT NULL
                AND c.relname IN ('facts_transaction_id', 'facts_app_account_token', 'notifications_rejected_received_at')
                """
                : """
                SELECT COUNT(*) FROM sqlite_master WHERE sql LIKE '%WHERE%'
                AND name IN ('facts_transaction_id', 'facts_app_account_token', 'notifications_rejected_received_at')
                """
            #expect(try await store.count(partial) == 3)
            #expect(try await store.signedTexts().values.sorted() == Legacy.texts.sorted())
            #expect(
                try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) }
                    == Legacy.bodies.sorted { $0.lexicographicallyPrecedes($1) })
            // Every customer's facts are read as before: a fresh projection changes nothing.
            let report = try await store.compareProjections(projector: testProjector)
            #expect(report.differences == 0 && report.failedCustomers.isEmpty)
            // Each notification's facts delivered again in another message: replays, found by their keys.
            for (index, (message, facts)) in Legacy.notifications.enumerated() {
                var again = message
                again.notificationUUID = "again-\(index)"
                let result = try await store.ingest(again, facts: facts, claim: nil, projector: testProjector, now: testNow)
                #expect(result.insertedFacts == 0 && result.replayedFacts == 3)
            }
            #expect(try await store.rows("facts") == Int64(Legacy.texts.count))
            await store.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
