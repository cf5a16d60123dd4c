import Foundation
import Testing

@testable import Storage

/// The SQLite file itself: one that cannot be written is refused at open (SQLite would otherwise
/// open it read-only without a word), and damaged pages are found by the integrity check.
@Suite("SQLite database files")
struct DatabaseFileTests {
    /// A migrated database file with some facts, closed (its WAL checkpointed into the file).
    static func populatedFile() async throws -> (TestDatabase, String) {
        let database = try TestDatabase(.sqliteFile)
        let store = try await database.open()
        for index in 0..<300 {
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o\(index)", tid: "t\(index)", expires: testNow + day, signed: testNow)]),
                projector: testProjector, now: testNow)
        }
        await store.close()
        return (database, String(database.url.dropFirst("sqlite:".count)))
    }

    @Test("a file SQLite can only open read-only is refused, naming the file")
    func readOnlyRefused() async throws {
        let (database, path) = try await Self.populatedFile()
        defer { Task { await database.destroy() } }
        // `mode=ro` opens the file the way SQLite falls back to when it cannot write it (a
        // read-only file; chmod alone does not stop root, who runs the tests in CI).
        await #expect {
            _ = try await openStore(url: "sqlite:file:\(path)?mode=ro")
        } throws: { error in
            guard let error = error as? StorageError else { return false }
            return error.code == .unavailable && error.message.contains("cannot be written") && error.message.contains(path)
        }
        // A URI is SQLite's to read: no folder named after it appears in the working directory.
        let uriFolder = FileManager.default.currentDirectoryPath + "/file:" + URL(fileURLWithPath: path).deletingLastPathComponent().path
        #expect(!FileManager.default.fileExists(atPath: uriFolder))
    }

    @Test("the integrity check passes a sound file and finds damaged pages")
    func damagedPages() async throws {
        let (database, path) = try await Self.populatedFile()
        defer { Task { await database.destroy() } }
        var store = try await database.open()
        let sound = try await store.checkIntegrity(full: false, timeLimit: .seconds(30))
        #expect(sound == IntegrityReport(check: "quick_check", problems: [], complete: true))
        await store.close()

        // Garbage over a few pages of the facts' B-trees (not the first: the schema lives there).
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        #expect(size > 40 * 4096)
        for page in stride(from: 10, to: 40, by: 3) {
            try handle.seek(toOffset: UInt64(page * 4096))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        }
        try handle.close()

        var options = database.configuration(migrate: false)
        options.sqliteReadConnections = 1
        store = try await openStore(url: database.url, configuration: options)
        for full in [false, true] {
            let damaged = try await store.checkIntegrity(full: full, timeLimit: nil)
            #expect(!damaged.problems.isEmpty, "\(damaged)")
            #expect(damaged.problems.count <= 100)
            #expect(damaged.check == (full ? "integrity_check" : "quick_check"))
        }
        await store.close()
    }

    @Test("the integrity check stops at its time limit")
    func timeLimit() async throws {
        let (database, _) = try await Self.populatedFile()
        defer { Task { await database.destroy() } }
        let store = try await database.open()
        let report = try await store.checkIntegrity(full: true, timeLimit: .zero)
        #expect(report.complete == false)
        #expect(report.problems.isEmpty)
        await store.close()
    }

    @Test("a missing, an empty and a written file are told apart")
    func fileState() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-state-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("db.sqlite").path
        #expect(SQLiteFileState(path: path) == .missing)
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        #expect(SQLiteFileState(path: path) == .empty)
        try Data(repeating: 1, count: 10).write(to: URL(fileURLWithPath: path))
        #expect(SQLiteFileState(path: path) == .existing(bytes: 10))
    }
}
