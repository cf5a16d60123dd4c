import Entitlements
import Foundation
import Testing

@testable import Storage

/// Writes the migration tests' fixture databases with this binary stopped at an older schema
/// version. Runs only with `ENTITLED_WRITE_FIXTURES` set to a folder: each SQLite fixture is
/// written there, each PostgreSQL one into a schema named `fixture_<name>` (dumped by
/// `pg_dump` afterwards, see Fixtures/README.md).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ENTITLED_WRITE_FIXTURES"] != nil))
struct FixtureWriter {
    static let folder = URL(fileURLWithPath: ProcessInfo.processInfo.environment["ENTITLED_WRITE_FIXTURES"] ?? "/nonexistent")

    static func database(_ name: String, _ backend: Backend) throws -> TestDatabase {
        switch backend {
        case .postgres: return TestDatabase(backend: .postgres, url: Backend.postgresURL!, schema: "fixture_\(name)", directory: nil)
        default:
            let path = folder.appendingPathComponent("\(name).sqlite")
            try? FileManager.default.removeItem(at: path)
            return TestDatabase(backend: .sqliteFile, url: "sqlite:" + path.path, schema: nil, directory: nil)
        }
    }

    static func open(_ database: TestDatabase, version: Int) async throws -> any LedgerStore {
        var configuration = database.configuration()
        configuration.migrationLimit = version
        return try await openStore(url: database.url, configuration: configuration)
    }

    @Test(arguments: Backend.durable) func repack(_ backend: Backend) async throws {
        let store = try await Self.open(try Self.database("ledger_v13", backend), version: Schema.unpackedVersion)
        try await RepackMigrationTests.Legacy.write(store)
        #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == 13)
        await store.close()
    }

    @Test(arguments: Backend.durable) func compress(_ backend: Backend) async throws {
        let store = try await Self.open(try Self.database("ledger_v15", backend), version: Schema.compressedJSONVersion - 1)
        try await RepackMigrationTests.Legacy.write(store)
        #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == 15)
        await store.close()
    }

    @Test(arguments: Backend.durable) func counters(_ backend: Backend) async throws {
        let before = try await Self.open(try Self.database("ingest_v17", backend), version: IngestCounters.schemaVersion - 1)
        for (index, at) in [testNow - 72 * IngestCounterTests.hour, testNow - 2 * IngestCounterTests.hour, testNow].enumerated() {
            let fact = Fixture.transaction(otid: "o\(index)", tid: "t\(index)", expires: at + 30 * 86_400_000, signed: at)
            _ = try await before.ingest(Fixture.batch(uuid: "n\(index)", facts: [fact], receivedAt: at), projector: testProjector, now: at)
        }
        try await IngestCounterTests.rejected(before, at: testNow, code: "SIGNATURE_INVALID")
        await before.close()
    }

    @Test(arguments: Backend.durable) func identity(_ backend: Backend) async throws {
        let store = try await Self.open(try Self.database("facts_v3", backend), version: 3)
        let token = "00000000-0000-4000-8000-0000000000aa"
        let original = FactIdentityTests.fact(tid: "t1", signature: "c2lnMQ", token: token)
        let twin = FactIdentityTests.fact(tid: "t1", signature: "c2lnMg", token: token)
        let other = FactIdentityTests.fact(tid: "t2", signature: "c2lnMw", token: token)
        try await store.raw("INSERT INTO customers (app_user_id, app_account_token, created_at) VALUES ('alice', '\(token)', \(testNow))")
        try await store.raw(
            "INSERT INTO notifications (notification_uuid, source, received_at, outcome, body) VALUES ('old', 'apple-v2', \(testNow), 'accepted', '{}')")
        func insert(_ fact: SignedFact, tid: String) async throws {
            try await _StorageFixtures.insertFactRow(
                store, kind: "transaction", signed: try #require(fact.signed), payload: testProjector.encode(fact.fact),
                transactionId: tid, originalTransactionId: "o1", appAccountToken: token, bundleId: "com.example",
                signedDate: testNow, receivedAt: testNow)
        }
        try await insert(original, tid: "t1")
        try await insert(other, tid: "t2")
        try await store.raw(
            "UPDATE facts SET jws_sha256 = 'old-' || CAST(id AS TEXT), notification_id = (SELECT MAX(id) FROM notifications)")
        try await insert(twin, tid: "t1")
        try await store.raw(
            "UPDATE facts SET jws_sha256 = 'old-twin', notification_id = (SELECT MAX(id) FROM notifications) WHERE notification_id IS NULL")
        #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == 3)
        await store.close()
    }

    @Test(arguments: Backend.durable) func unsigned(_ backend: Backend) async throws {
        let store = try await Self.open(try Self.database("facts_v5", backend), version: 5)
        let foreign = #"{"kind":"other"}"#
        for fact in UnsignedFactIdentityTests.facts { try await UnsignedFactIdentityTests.insertOld(fact, into: store) }
        try await _StorageFixtures.insertFactRow(
            store, kind: "receipt", signed: foreign, payload: foreign, originalTransactionId: nil, signedDate: testNow, receivedAt: testNow)
        #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == 5)
        await store.close()
    }
}

extension TestDatabase {
    init(backend: Backend, url: String, schema: String?, directory: URL?) {
        self.backend = backend
        self.url = url
        self.schema = schema
        self.directory = directory
    }
}
