import Entitlements
import Testing

@testable import Storage

/// Schema versions 43 and 44 on a ledger as schema 42 left it: the facts' and the messages' unique
/// keys checked through hashes (``Schema/shortKeyIndexes(_:)``), and on SQLite a fact's kind and
/// environment stored as codes (``Schema/factCodes(_:)``). Every fact, text and message is found as
/// before, and a key stored once is never stored twice.
@Suite("Schemas 43 and 44: ledger keys through hashes, fact words as codes")
struct ShortKeyIndexTests {
    typealias Legacy = RepackMigrationTests.Legacy

    @Test("a schema-42 ledger keeps every fact, text and message; replays store nothing", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            // The ledger an older version wrote, migrated as far as schema 42.
            try await database.restore(.ledgerV15)
            let old = try await database.open(through: 42)
            #expect(try await old.count("SELECT MAX(version) FROM schema_migrations") == 42)
            var facts: [String: [StoredFact]] = [:]
            for customer in Legacy.customers { facts[customer] = try await old.facts(appUserId: customer, projector: testProjector) }
            var received: [String: Int64?] = [:]
            for (message, _) in Legacy.notifications {
                received[message.notificationUUID!] = try await old.notificationReceivedAt(notificationUUID: message.notificationUUID!)
            }
            let factRows = try await old.rows("facts")
            let productionTransactions: SQLQuery = "SELECT COUNT(*) FROM facts WHERE kind = 'transaction' AND environment = 'Production'"
            let transactions = try await old.count(productionTransactions)
            #expect(transactions > 0)
            let messageRows = try await old.rows("notifications")
            await old.close()

            let store = try await database.open()
            if backend == .postgres {
                // Exclusion constraints through hash indexes instead of the unique B-trees.
                #expect(
                    try await store.count(
                        """
                        SELECT COUNT(*) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
                        WHERE n.nspname = current_schema() AND c.conname IN ('facts_key', 'notifications_uuid') AND c.contype = 'x'
                        """) == 2)
                #expect(
                    try await store.count(
                        """
                        SELECT COUNT(*) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
                        WHERE n.nspname = current_schema() AND c.contype = 'u' AND c.conrelid::regclass::text IN ('facts', 'notifications')
                        """) == 0)
            } else {
                // The whole-key unique indexes are gone, the short ones and their triggers there.
                #expect(
                    try await store.count(
                        "SELECT COUNT(*) FROM sqlite_master WHERE tbl_name IN ('facts', 'notifications') AND name LIKE 'sqlite_autoindex%'") == 0)
                #expect(
                    try await store.count(
                        """
                        SELECT COUNT(*) FROM sqlite_master WHERE name IN ('facts_key', 'notifications_uuid', 'facts_key_insert',
                            'facts_key_update', 'notifications_uuid_insert', 'notifications_uuid_update')
                        """) == 6)
            }
            #expect(try await store.rows("facts") == factRows)
            #expect(try await store.signedTexts().values.sorted() == Legacy.texts.sorted())
            #expect(
                try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) }
                    == Legacy.bodies.sorted { $0.lexicographicallyPrecedes($1) })
            for customer in Legacy.customers {
                #expect(try await store.facts(appUserId: customer, projector: testProjector) == facts[customer])
            }
            let report = try await store.compareProjections(projector: testProjector)
            #expect(report.differences == 0 && report.failedCustomers.isEmpty)
            for (uuid, at) in received { #expect(try await store.notificationReceivedAt(notificationUUID: uuid) == at) }

            // A message delivered again is a duplicate; its facts in another message are replays.
            for (index, (message, signed)) in Legacy.notifications.enumerated() {
                let again = try await store.ingest(message, facts: signed, claim: nil, projector: testProjector, now: testNow)
                #expect(again.status == .duplicate)
                var other = message
                other.notificationUUID = "again-\(index)"
                let replay = try await store.ingest(other, facts: signed, claim: nil, projector: testProjector, now: testNow)
                #expect(replay.status == .accepted && replay.insertedFacts == 0 && replay.replayedFacts == 3)
            }
            #expect(try await store.rows("facts") == factRows)
            #expect(try await store.rows("notifications") == messageRows + Int64(Legacy.notifications.count))

            // The same signed text twice in one message is stored once.
            let (message, signed) = AppleShaped.notification(uuid: "n-twice", otid: "o-twice", token: nil, seed: 700)
            let twice = try await store.ingest(message, facts: signed + [signed[1]], claim: nil, projector: testProjector, now: testNow)
            #expect(twice.insertedFacts == 3 && twice.replayedFacts == 1)
            #expect(try await store.signedTexts().values.sorted() == (Legacy.texts + signed.compactMap(\.signed)).sorted())
            #expect(try await store.bodies().values.contains(message.body))
            if backend != .postgres {
                // Rows written before keep their words, new ones store codes; both read as words.
                #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE typeof(kind_code) = 'blob'") == 3)
                #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE typeof(kind_code) = 'text'") == factRows)
                #expect(try await store.count(productionTransactions) == transactions + 1)
            }

            // The database keeps the keys unique whoever writes: a copy of a stored fact is skipped,
            // a row moved onto a stored key refused.
            // (SQLite: a copy of the newest row, stored with a code, and of the oldest, with its word.)
            let all = try await store.rows("facts")
            let kind = backend == .postgres ? "kind" : "kind_code"
            for row in ["MIN", "MAX"] {
                try await store.raw(
                    """
                    INSERT INTO facts (notification_id, \(kind), jws_sha256, jws, payload, received_at)
                    SELECT notification_id, \(kind), jws_sha256, jws, payload, received_at FROM facts WHERE id = (SELECT \(row)(id) FROM facts)
                    ON CONFLICT DO NOTHING
                    """)
            }
            #expect(try await store.rows("facts") == all)
            await #expect(throws: (any Error).self) {
                try await store.raw(
                    """
                    UPDATE facts SET \(kind) = (SELECT \(kind) FROM facts WHERE id = (SELECT MIN(id) FROM facts)),
                        jws_sha256 = (SELECT jws_sha256 FROM facts WHERE id = (SELECT MIN(id) FROM facts))
                    WHERE id = (SELECT MAX(id) FROM facts)
                    """)
            }
            await #expect(throws: (any Error).self) {
                try await store.raw("UPDATE notifications SET notification_uuid = 'n-0' WHERE notification_uuid = 'n-1'")
            }
            await store.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }

    @Test func aDefinitionItDoesNotKnowIsRefused() throws {
        let stored = "CREATE TABLE facts (\n    id INTEGER PRIMARY KEY,\n    kind TEXT NOT NULL, x BLOB,\n    UNIQUE (kind, jws_sha256)\n)"
        #expect(
            try Schema.rebuilt(stored, as: "copy", removing: #",\s*UNIQUE\s*\(\s*kind\s*,\s*jws_sha256\s*\)"#, keeping: "")
                == "CREATE TABLE copy (\n    id INTEGER PRIMARY KEY,\n    kind TEXT NOT NULL, x BLOB\n)")
        #expect(throws: StorageError.self) { try Schema.rebuilt("CREATE TABLE facts (id INTEGER)", as: "copy", removing: "UNIQUE", keeping: "") }
    }
}
