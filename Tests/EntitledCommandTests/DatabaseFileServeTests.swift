@testable import EntitledTestSupport
import Entitlements
import Foundation
import Storage
import EntitledServer
import Testing

/// `entitled serve` on a SQLite file it cannot use: a read-only file stops the start (exit 1,
/// naming the file and the OS's reason), damaged pages too; an empty file is logged as new.
@Suite struct DatabaseFileServeTests {
    struct Outcome {
        var status: Int32?
        var stdout: String
        var stderr: String
    }

    /// Runs `entitled` (as `nobody` when the tests run as root, whom file modes do not stop) and
    /// waits for it to exit; a process still running after `limit` is terminated (status nil).
    static func run(_ arguments: [String], asUnprivileged: Bool = false, limit: Duration = .seconds(20)) async throws -> Outcome {
        let process = Process()
        if asUnprivileged && getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "nobody", "--", CLI.binary.path] + arguments
        } else {
            process.executableURL = CLI.binary
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        for key in ["ENTITLED_CONFIG", "ENTITLED_LISTEN", "ENTITLED_DATABASE"] { environment.removeValue(forKey: key) }
        process.environment = environment
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-out-\(UUID())")
        FileManager.default.createFile(atPath: output.path + ".out", contents: nil)
        FileManager.default.createFile(atPath: output.path + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: output.path + ".out")
            try? FileManager.default.removeItem(atPath: output.path + ".err")
        }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output.path + ".out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: output.path + ".err"))
        try process.runSerialized()
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let finished = !process.isRunning
        if !finished {
            process.terminate()
            process.waitUntilExit()
        }
        return Outcome(
            status: finished ? process.terminationStatus : nil,
            stdout: (try? String(contentsOfFile: output.path + ".out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: output.path + ".err", encoding: .utf8)) ?? "")
    }

    @Test func aReadOnlyDatabaseFileStopsTheStartNamingTheFileAndTheReason() async throws {
        let folder = try CLI.writableFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("entitled.sqlite").path
        let migrated = try await Self.run(["migrate", "--database", "sqlite:\(path)"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(chmod(path, 0o444) == 0)

        let serve = try await Self.run(["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(path)"], asUnprivileged: true)
        #expect(serve.status == 1, "the server started on a read-only database: \(serve.stdout)")
        #expect(serve.stderr.contains(path), "\(serve.stderr)")
        #expect(serve.stderr.contains("cannot be written: Permission denied"), "\(serve.stderr)")
    }

    /// Overwrites `pages` (4 KiB each) of the file with garbage.
    static func damage(_ path: String, pages: StrideTo<Int>) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        for page in pages where UInt64(page * 4096) < size {
            try handle.seek(toOffset: UInt64(page * 4096))
            try handle.write(contentsOf: Data(repeating: 0x5A, count: 4096))
        }
        try handle.close()
    }

    @Test func damagedPagesStopTheStartAndEntitledCheckListsThem() async throws {
        let folder = try CLI.writableFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("entitled.sqlite").path
        let store = try await openStore(url: "sqlite:\(path)")
        for index in 0..<300 {
            let fact = Fact.transaction(
                TransactionFact(
                    transactionId: "t\(index)", originalTransactionId: "o\(index)", productId: String(repeating: "p", count: 400),
                    purchaseDate: 0, productType: .autoRenewable, signedDate: 0))
            _ = try await store.ingest(
                ReceivedMessage(notificationUUID: "n\(index)", source: .client, body: [], receivedAt: 0), facts: [(fact, nil)],
                claim: nil, projector: FactLedger(store: store, policy: Policy()).projector, now: 0)
        }
        await store.close()
        let sound = try await Self.run(["check", "--database", "sqlite:\(path)"])
        #expect(sound.status == 0, "\(sound.stdout)\(sound.stderr)")
        #expect(sound.stdout.contains("quick_check ok"), "\(sound.stdout)")

        // Pages written last (the facts' B-trees); the schema's pages, written first, stay readable.
        let pages = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0) / 4096
        #expect(pages > 100)
        try Self.damage(path, pages: stride(from: pages - 60, to: pages - 2, by: 4))
        let serve = try await Self.run(["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(path)"])
        #expect(serve.status == 1, "the server started on a damaged database: \(serve.stdout)")
        #expect(serve.stderr.contains("has damaged pages (quick_check)"), "\(serve.stderr)")
        let check = try await Self.run(["check", "--database", "sqlite:\(path)", "--full"])
        #expect(check.status == 1)
        #expect(check.stdout.contains("integrity_check found"), "\(check.stdout) \(check.stderr)")

        // So damaged that not even the schema reads: still a finding, not a crash.
        try Self.damage(path, pages: stride(from: 1, to: 400, by: 1))
        let ruined = try await Self.run(["check", "--database", "sqlite:\(path)"])
        #expect(ruined.status == 1)
        #expect(ruined.stdout.contains("the file is damaged") || ruined.stdout.contains("quick_check found"), "\(ruined.stdout) \(ruined.stderr)")
    }

    @Test func anEmptyDatabaseFileIsLoggedAsNew() async throws {
        let folder = try CLI.writableFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("entitled.sqlite").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let serve = try await Self.run(["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(path)"], limit: .seconds(3))
        #expect(serve.status == nil, "the server should have started: \(serve.stderr)")
        #expect(serve.stdout.contains("database file is empty (0 bytes): treated as a new database"), "\(serve.stdout)")
        #expect(serve.stdout.contains("listening"))
    }
}
