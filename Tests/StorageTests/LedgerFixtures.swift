import Foundation
import Testing

@testable import Storage

/// Databases as older binaries left them, checked in under `Fixtures/` (how each was made and
/// which schema version it is: `Fixtures/README.md`). The store writes only the current layout,
/// so a test of a migration starts from one of these.
enum LedgerFixture: String {
    /// Version 13: the ledger of ``RepackMigrationTests/legacy`` with signed text unpacked.
    case ledgerV13 = "ledger_v13"
    /// Version 15: the same ledger packed, its JSON not compressed.
    case ledgerV15 = "ledger_v15"
    /// Version 17 (the last before 19; there is no 18): messages received 72 h, 2 h and 0 h before `testNow`, and a rejected one, no counters.
    case ingestV17 = "ingest_v17"
    /// Version 3: facts keyed by the digest of their whole signed text, a twin among them.
    case factsV3 = "facts_v3"
    /// Version 5: unsigned facts keyed by their (pretty-printed) JSON, and a row that is no engine fact.
    case factsV5 = "facts_v5"

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// Its schema version.
    var version: Int64 {
        switch self {
        case .ledgerV13: 13
        case .ledgerV15: 15
        case .ingestV17: 17
        case .factsV3: 3
        case .factsV5: 5
        }
    }

    /// The PostgreSQL schema the dump was taken of (replaced by the test's own when applied).
    var dumpedSchema: String { "fixture_\(rawValue)" }
}

extension TestDatabase {
    /// Fills this fresh database with `fixture`: SQLite, a copy of its file; PostgreSQL, its dump
    /// applied into this test's schema over a connection of its own (the dump sets the session's
    /// `search_path`).
    func restore(_ fixture: LedgerFixture) async throws {
        switch backend {
        case .sqliteFile:
            let path = String(url.dropFirst("sqlite:".count))
            try FileManager.default.copyItem(
                at: LedgerFixture.folder.appendingPathComponent("\(fixture.rawValue).sqlite"), to: URL(fileURLWithPath: path))
        case .postgres:
            let dump = try String(contentsOf: LedgerFixture.folder.appendingPathComponent("\(fixture.rawValue).sql"), encoding: .utf8)
            var options = configuration(migrate: false)
            options.skipSchemaCheck = true
            options.postgresConnections = 1
            let store = try await openStore(url: url, configuration: options)
            do {
                try await store.raw(dump.replacingOccurrences(of: fixture.dumpedSchema, with: try #require(schema)))
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        case .sqliteMemory:
            throw StorageError(.invalidArgument, "a fixture needs a durable database")
        }
        let store = try await open(migrate: false)
        let version = try? await store.count("SELECT MAX(version) FROM schema_migrations")
        await store.close()
        #expect(version == fixture.version, "\(fixture.rawValue)")
    }
}
