import Foundation
import Synchronization
import Testing

@testable import Storage

/// Process-level guarantees: kill -9 in the middle of group commits, and two processes ingesting
/// the same notifications at the same moment. The child is the built `entitled` binary's hidden
/// `_storage-crash-child` command.
@Suite("Crash safety and concurrent processes")
struct CrashTests {
    static let childNow: Int64 = 1_800_000_000_000

    /// The `entitled` executable built alongside the tests (`ENTITLED_BINARY` overrides).
    static func entitledBinary() throws -> URL {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["ENTITLED_BINARY"] { candidates.append(URL(fileURLWithPath: path)) }
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        candidates.append(runner.appendingPathComponent("entitled"))
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("entitled"))
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("entitled"))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/entitled"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw StorageError(.notFound, "the entitled binary was not built next to the tests")
        }
        return found
    }

    /// A running child whose standard output is collected line by line.
    final class Child: Sendable {
        final class Buffer: Sendable {
            let bytes = Mutex<[UInt8]>([])
        }

        let process: Process
        private let output = Buffer()
        private let pipe = Pipe()

        init(database: TestDatabase, count: Int, concurrency: Int) throws {
            process = Process()
            process.executableURL = try CrashTests.entitledBinary()
            var arguments = [
                "_storage-crash-child", "--database", database.url, "--count", String(count), "--concurrency",
                String(concurrency), "--now", String(CrashTests.childNow),
            ]
            if let schema = database.schema { arguments += ["--postgres-schema", schema] }
            process.arguments = arguments
            process.standardOutput = pipe
            process.standardError = FileHandle.standardError
            pipe.fileHandleForReading.readabilityHandler = { [output] handle in
                let data = handle.availableData
                output.bytes.withLock { $0.append(contentsOf: data) }
            }
            try process.run()
        }

        var lines: [String] {
            output.bytes.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
        }

        /// Waits for the child to exit, then collects what it wrote last.
        func finish() {
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
            let rest = pipe.fileHandleForReading.readDataToEndOfFile()
            output.bytes.withLock { $0.append(contentsOf: rest) }
        }

        func waitForLines(_ count: Int, timeout: Double) async throws {
            let deadline = Date().addingTimeInterval(timeout)
            while lines.count < count {
                guard process.isRunning, Date() < deadline else { break }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The ledger invariants: every stored notification has both its facts, every fact its
    /// notification and link, every link its projection; and a rebuild changes nothing.
    static func checkLedger(_ store: any LedgerStore) async throws {
        #expect(
            try await store.count(
                """
                SELECT COUNT(*) FROM notifications n
                WHERE n.outcome = 'accepted' AND (SELECT COUNT(*) FROM facts f WHERE f.notification_id = n.id) <> 2
                """) == 0)
        #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE notification_id IS NULL") == 0)
        #expect(
            try await store.count(
                """
                SELECT COUNT(*) FROM facts f
                WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.original_transaction_id = f.original_transaction_id)
                """) == 0)
        #expect(try await store.rows("subscription_projections") == store.rows("links"))
        let report = try await store.rebuild(projector: Projector(), now: childNow)
        #expect(report.differences == 0, "rebuild after the crash changed \(report.changedCustomers)")
    }

    @Test("kill -9 in the middle of group commits: every ingest is complete or absent", arguments: Backend.durable)
    func killNine(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        // Migrate first so the child is ingesting, not migrating, when it dies.
        try await database.open().close()
        let child = try Child(database: database, count: 1_000_000, concurrency: 16)
        // Generous: on a loaded machine (CI runs other suites and the fuzzers beside this) the
        // debug child can take a minute to acknowledge 300.
        try await child.waitForLines(300, timeout: 240)
        let exitedEarly = !child.process.isRunning
        kill(child.process.processIdentifier, SIGKILL)
        child.finish()
        #expect(!exitedEarly, "the child exited (status \(child.process.terminationStatus)) before it was killed: \(child.lines.suffix(3))")
        #expect(child.process.terminationReason == .uncaughtSignal)
        let acknowledged = child.lines.filter { $0.hasPrefix("ok ") }.map { String($0.split(separator: " ")[1]) }
        #expect(acknowledged.count >= 300)

        let store = try await database.open()
        // Acknowledged means durable: every acknowledged notification is there.
        let stored = try await store.rows("notifications")
        #expect(stored >= Int64(acknowledged.count))
        for uuid in acknowledged.suffix(50) {
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE notification_uuid = \(uuid)") == 1)
        }
        try await Self.checkLedger(store)
        await store.close()
        await database.destroy()
    }

    @Test("two processes ingesting the same notifications at once apply each exactly once", arguments: Backend.durable)
    func twoProcesses(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        try await database.open().close()
        let count = 300
        let first = try Child(database: database, count: count, concurrency: 8)
        let second = try Child(database: database, count: count, concurrency: 8)
        first.finish()
        second.finish()
        #expect(first.process.terminationStatus == 0)
        #expect(second.process.terminationStatus == 0)
        let results = (first.lines + second.lines).filter { $0.hasPrefix("ok ") }
        #expect(results.count == 2 * count)
        #expect(results.filter { $0.hasSuffix(" accepted") }.count == count)
        #expect(results.filter { $0.hasSuffix(" duplicate") }.count == count)
        let applied = Set(results.filter { $0.hasSuffix(" accepted") }.map { $0.split(separator: " ")[1] })
        #expect(applied.count == count)

        let store = try await database.open()
        #expect(try await store.rows("notifications") == Int64(count))
        #expect(try await store.rows("facts") == Int64(2 * count))
        #expect(try await store.rows("customers") == 16)
        try await Self.checkLedger(store)
        await store.close()
        await database.destroy()
    }

    @Test("two independent pools racing on the same notifications apply each once", arguments: Backend.postgresOnly)
    func twoPools(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let one = try await database.open()
        let two = try await database.open()
        let count = 200
        let projector = Projector()
        let statuses = try await withThrowingTaskGroup(of: IngestResult.Status.self) { group in
            for store in [one, two] {
                for lane in 0..<8 {
                    group.addTask {
                        var index = lane
                        var last = IngestResult.Status.accepted
                        while index < count {
                            let result = try await store.ingest(
                                _StorageCrashBatch.batch(index, now: testNow), projector: projector, now: testNow)
                            last = result.status
                            index += 8
                        }
                        return last
                    }
                }
            }
            return try await group.reduce(into: [IngestResult.Status]()) { $0.append($1) }
        }
        #expect(statuses.count == 16)
        #expect(try await one.rows("notifications") == Int64(count))
        #expect(try await one.rows("facts") == Int64(2 * count))
        #expect(try await one.rows("links") == Int64(count))
        let report = try await one.rebuild(projector: projector, now: testNow)
        #expect(report.differences == 0)
        await one.close()
        await two.close()
        await database.destroy()
    }

    @Test("the pool reconnects after its connections are killed", arguments: Backend.postgresOnly)
    func reconnect(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let name = "entitled_reconnect_\(UInt32.random(in: 0...UInt32.max))"
        let separator = database.url.contains("?") ? "&" : "?"
        var configuration = database.configuration()
        configuration.postgresConnections = 2
        let victim = try await openStore(url: database.url + separator + "application_name=" + name, configuration: configuration)
        let killer = try await database.open()
        for index in 0..<4 {
            _ = try await victim.ingest(_StorageCrashBatch.batch(index, now: testNow), projector: testProjector, now: testNow)
        }
        try await killer.raw("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(name)'")
        // Until the server has ended the victim's backends (the ingests below then meet dead connections).
        let gone = await waitUntil {
            (try? await killer.count("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = \(name)")) == 0
        }
        #expect(gone)
        for index in 4..<12 {
            let result = try await victim.ingest(_StorageCrashBatch.batch(index, now: testNow), projector: testProjector, now: testNow)
            #expect(result.status == .accepted)
            try await victim.ping()
        }
        #expect(try await killer.rows("notifications") == 12)
        await victim.close()
        await killer.close()
        await database.destroy()
    }
}
