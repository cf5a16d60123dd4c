import Foundation
import Testing

@testable import Storage

/// Fresh SQLite test databases start as a copy of one migrated database (``withStore``): the copy
/// must be what migrating from nothing gives, or the tests that start from it test another schema.
@Suite struct MigratedTemplateTests {
    /// Every schema object's definition, every recorded version and the file-level settings.
    static func schema(_ store: any LedgerStore) async throws -> [String] {
        let sqlite = try #require(store as? SQLiteStore)
        return try await sqlite.read { session in
            try session.values("SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name", as: String.self)
                + session.values("SELECT version || ' ' || name FROM schema_migrations ORDER BY version", as: String.self)
                + ["page_size", "auto_vacuum", "journal_mode", "user_version", "encoding"].map { pragma in
                    "\(pragma) " + (try session.values(SQLQuery(verbatim: "SELECT CAST(\(pragma) AS TEXT) FROM pragma_\(pragma)()"), as: String.self).joined())
                }
        }
    }

    @Test("a store started from the template has the schema migrating from nothing gives", arguments: [Backend.sqliteFile, .sqliteMemory])
    func templateMatchesMigrating(backend: Backend) async throws {
        let scratch = try TestDatabase(backend)
        let migrated = try await scratch.open()
        let expected = try await Self.schema(migrated)
        await migrated.close()
        await scratch.destroy()
        #expect(expected.count > Schema.migrations.count)

        let copy = try TestDatabase(backend)
        var options = copy.configuration()
        try await options.startMigrated(backend)
        #expect(options.sqliteInitialImage != nil)
        let store = try await openStore(url: copy.url, configuration: options)
        #expect(try await Self.schema(store) == expected)
        #expect(try await store.migrate().applied.isEmpty)
        await store.close()
        await copy.destroy()
    }

    @Test("a new database starts as the image; an existing file is kept", arguments: [Backend.sqliteFile, .sqliteMemory])
    func newDatabaseStartsAsTheImage(backend: Backend) async throws {
        let source = try await openStore(url: "sqlite::memory:")
        try await source.raw("CREATE TABLE marker (x INTEGER)")
        try await source.raw("INSERT INTO marker (x) VALUES (7)")
        let sqlite = try #require(source as? SQLiteStore)
        let image = try await sqlite.read { session in try #require(session as? SQLiteConnection).serialize() }
        await source.close()

        let database = try TestDatabase(backend)
        var options = database.configuration()
        options.sqliteInitialImage = image
        let store = try await openStore(url: database.url, configuration: options)
        #expect(try await store.count("SELECT x FROM marker") == 7)
        // Written to after it started from the image: the image is not shared.
        try await store.raw("UPDATE marker SET x = 8")
        await store.close()

        if backend == .sqliteFile {
            let reopened = try await openStore(url: database.url, configuration: options)
            #expect(try await reopened.count("SELECT x FROM marker") == 8)
            await reopened.close()
        }
        await database.destroy()
    }
}
