import Foundation
import Testing

@testable import Storage

/// SQLite keeps the customers' states in a rowid table: a read descends the narrow index of
/// `app_user_id`, not a B-tree of whole multi-KB rows (see ``Schema/rowidCustomerStates(_:)``).
@Suite struct RowidStatesTests {
    static let withoutRowid: SQLQuery =
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'customer_states' AND sql LIKE '%WITHOUT ROWID%'"

    @Test func aNewDatabaseKeepsStatesInARowidTable() async throws {
        try await withStore(.sqliteFile) { store, _ in
            let fatTables = try await store.count(Self.withoutRowid)
            let answerColumns = try await store.count("SELECT COUNT(*) FROM pragma_table_info('customer_states') WHERE name = 'answer'")
            #expect(fatTables == 0)
            #expect(answerColumns == 1)
        }
    }

    /// A database written as a `WITHOUT ROWID` table keeps every state and answer through the
    /// rebuild, its later columns included, and reads them as before.
    @Test func theUpgradeRebuildsTheTableWithEveryRow() async throws {
        let database = try TestDatabase(.sqliteFile)
        do {
            try await database.restore(.ledgerV15)
            let before = try await RepackMigrationTests.answers(database)
            let store = try await database.open()
            do {
                #expect(try await store.count(Self.withoutRowid) == 0)
                #expect(try await store.count("SELECT COUNT(*) FROM customer_states") == Int64(before.count))
                for (name, old) in before where !old.document.isEmpty {
                    let state = try #require(try await store.projection(appUserId: name))
                    #expect(state.answer == old.document)
                }
                // Its primary key still holds, as a unique index.
                await #expect(throws: (any Error).self) {
                    try await store.raw(
                        "INSERT INTO customer_states SELECT * FROM customer_states WHERE app_user_id = (SELECT MIN(app_user_id) FROM customer_states)")
                }
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }

    @Test func theDefinitionLosesOnlyItsClause() {
        let stored = "CREATE TABLE customer_states (\n a TEXT NOT NULL PRIMARY KEY,\n b INTEGER\n, c TEXT) WITHOUT ROWID"
        #expect(
            Schema.rowidDefinition(stored, as: "copy") == "CREATE TABLE copy (\n a TEXT NOT NULL PRIMARY KEY,\n b INTEGER\n, c TEXT) ")
        #expect(Schema.rowidDefinition("CREATE TABLE t (a TEXT) without rowid;\n", as: "u") == "CREATE TABLE u (a TEXT) ")
        #expect(Schema.rowidDefinition("CREATE TABLE t (a TEXT)", as: "u") == nil)
    }
}
