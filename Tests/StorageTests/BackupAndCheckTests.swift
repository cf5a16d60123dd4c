import Foundation
import Synchronization
import Testing

@testable import Storage

/// `entitled backup` and `entitled check`'s library halves: a consistent copy of a live SQLite
/// database, and every stored projection compared with a recomputation, writing nothing.
@Suite("Backups and projection checks")
struct BackupAndCheckTests {
    /// A path in a fresh temporary folder (not created).
    static func backupPath() throws -> (folder: URL, path: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-backup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (folder, folder.appendingPathComponent("copy.sqlite").path)
    }

    /// One subscription fact for a customer's token.
    static func purchase(_ index: Int, token: String) -> TestBatch {
        Fixture.batch(facts: [
            Fixture.transaction(otid: "o\(index)", tid: "t\(index)", expires: testNow + day, signed: testNow, token: token)
        ])
    }

    @Test("a backup taken while ingests commit opens, is sound and holds a consistent prefix")
    func backupDuringWrites() async throws {
        let database = try TestDatabase(.sqliteFile)
        let store = try await database.open()
        let (folder, path) = try Self.backupPath()
        defer { try? FileManager.default.removeItem(at: folder) }
        let total = 400
        var tokens: [String] = []
        for index in 0..<total {
            tokens.append(
                try await store.ensureCustomer(appUserId: "u\(index)", appAccountToken: nil, projector: testProjector, now: testNow)
                    .appAccountToken)
        }
        for index in 0..<20 { _ = try await store.ingest(Self.purchase(index, token: tokens[index]), projector: testProjector, now: testNow) }

        // Ingests keep committing while the copy is taken; `done` counts the acknowledged ones.
        let done = Atomic<Int>(20)
        let (started, signal) = AsyncStream<Void>.makeStream()
        let writer = Task {
            for index in 20..<total {
                _ = try await store.ingest(Self.purchase(index, token: tokens[index]), projector: testProjector, now: testNow)
                done.add(1, ordering: .sequentiallyConsistent)
                if index == 40 { signal.yield() }
            }
            signal.finish()
        }
        for await _ in started { break }
        let before = done.load(ordering: .sequentiallyConsistent)
        let report = try await store.backup(to: path)
        let after = done.load(ordering: .sequentiallyConsistent)
        try await writer.value
        #expect(report.path == path)
        #expect(report.bytes > 0)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))

        var options = StoreConfiguration()
        options.migrateOnOpen = false
        let copy = try await openStore(url: "sqlite:\(path)", configuration: options)
        #expect(try await copy.checkIntegrity(full: true, timeLimit: nil).problems == [])
        // Every projection in the copy matches the copy's own facts: no half-applied ingest.
        let consistency = try await copy.compareProjections(projector: testProjector)
        #expect(consistency.customers == total)
        #expect(consistency.differences == 0, "\(consistency.changedCustomers)")
        // The copy is the source at one instant around the two counts: a prefix of the ingests,
        // each customer answering as the source did once its purchase committed.
        var copied = 0
        for index in 0..<total {
            let facts = try await copy.facts(appUserId: "u\(index)")
            guard !facts.isEmpty else { continue }
            copied += 1
            #expect(try await copy.projection(appUserId: "u\(index)") == store.projection(appUserId: "u\(index)"))
        }
        // One more than acknowledged at most: the ingest in flight commits before its answer returns.
        #expect(copied >= before && copied <= after + 1, "copied \(copied), acknowledged \(before)…\(after)")
        for index in 0..<copied { #expect(try await !copy.facts(appUserId: "u\(index)").isEmpty) }
        await copy.close()
        await store.close()
        await database.destroy()
    }

    @Test("starting on a restored backup gives the same answers as the source")
    func restoreAnswersTheSame() async throws {
        try await withStore(.sqliteFile) { store, _ in
            var names: [String] = []
            for index in 0..<30 {
                let customer = try await store.ensureCustomer(
                    appUserId: "r\(index)", appAccountToken: nil, projector: testProjector, now: testNow)
                if index % 3 != 0 { _ = try await store.ingest(Self.purchase(index, token: customer.appAccountToken), projector: testProjector, now: testNow) }
                names.append(customer.appUserId)
            }
            let (folder, path) = try Self.backupPath()
            defer { try? FileManager.default.removeItem(at: folder) }
            _ = try await store.backup(to: path)
            // Started as the server starts: migrations run (none pending) on the copy.
            let restored = try await openStore(url: "sqlite:\(path)")
            for name in names {
                #expect(try await restored.projection(appUserId: name) == store.projection(appUserId: name))
                #expect(try await restored.facts(appUserId: name) == store.facts(appUserId: name))
            }
            #expect(try await restored.subscription(originalTransactionId: "o1") == store.subscription(originalTransactionId: "o1"))
            await restored.close()
        }
    }

    @Test("a backup never overwrites an existing file")
    func backupRefusesExistingFile() async throws {
        try await withStore(.sqliteFile) { store, _ in
            let (folder, path) = try Self.backupPath()
            defer { try? FileManager.default.removeItem(at: folder) }
            try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
            await #expect(throws: StorageError(.invalidArgument)) { try await store.backup(to: path) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("precious".utf8))
        }
    }

    @Test("PostgreSQL backups are refused, naming pg_dump", arguments: Backend.postgresOnly)
    func postgresBackupRefused(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            await #expect {
                try await store.backup(to: "/tmp/never-written.sqlite")
            } throws: { error in
                (error as? StorageError)?.code == .unsupported && (error as? StorageError)?.message.contains("pg_dump") == true
            }
        }
    }

    /// What the check is given to find: a row of each copy of the projection damaged.
    static let tampering: [(sql: String, customers: [String])] = [
        ("UPDATE subscription_projections SET status = 'tampered'", ["jo", "mo"]),
        ("UPDATE entitlement_projections SET active = 1 - active WHERE original_transaction_id = 'o1'", ["mo"]),
        ("UPDATE customer_states SET state = '{\"tampered\":true}' WHERE app_user_id = 'jo'", ["jo"]),
    ]

    @Test("the projection check passes clean projections and finds a tampered one, writing nothing",
          arguments: Backend.all, tampering)
    func checkFindsTampering(backend: Backend, tamper: (sql: String, customers: [String])) async throws {
        try await withStore(backend) { store, _ in
            for name in ["mo", "jo"] {
                let customer = try await store.ensureCustomer(appUserId: name, appAccountToken: nil, projector: testProjector, now: testNow)
                _ = try await store.ingest(
                    Self.purchase(name == "mo" ? 1 : 2, token: customer.appAccountToken), projector: testProjector, now: testNow)
            }
            let clean = try await store.compareProjections(projector: testProjector)
            #expect(clean == RebuildReport(customers: 2, differences: 0, changedCustomers: []))

            try await store.raw(tamper.sql)
            let tampered = try await store.compareProjections(projector: testProjector)
            #expect(tampered.changedCustomers == tamper.customers)
            // Nothing was repaired: the check finds the same again; rebuild is what repairs.
            #expect(try await store.compareProjections(projector: testProjector) == tampered)
            #expect(try await store.rebuild(projector: testProjector, now: testNow).changedCustomers == tampered.changedCustomers)
        }
    }
}
