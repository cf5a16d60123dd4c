import Foundation
import Synchronization
import Testing

@testable import Storage

/// A SQLite file's WAL under writes that never pause: the checkpointer copies it into the database
/// beside the writer, and the writer starts it over between two groups, so the file stays near
/// the restart threshold instead of growing with everything ever written.
@Suite struct WALRestartTests {
    @Test func theWALStaysSmallWhileWritersKeepTheWriterBusy() async throws {
        let database = try TestDatabase(.sqliteFile)
        let directory = try #require(database.directory)
        let wal = directory.appendingPathComponent("ledger.sqlite-wal").path
        var configuration = database.configuration()
        configuration.sqliteWALRestartPages = 256
        let restarts = Mutex<Int?>(nil)
        configuration.log = { event, fields in
            if event == "sqlite writer" { restarts.withLock { $0 = fields["walRestarts"].flatMap { Int($0) } } }
        }
        let store = try #require(try await openStore(url: database.url, configuration: configuration) as? SQLiteStore)
        try await store.raw("CREATE TABLE t (v BLOB)")

        // 24 writers, each committing a row of one page after another: a group is always queued
        // behind the one committing, so the writer holds the write lock all but microseconds.
        let (writers, rowsEach, rowBytes) = (24, 1000, 2048)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<writers {
                group.addTask {
                    for _ in 0..<rowsEach { try await store.raw("INSERT INTO t VALUES (randomblob(\(rowBytes)))") }
                }
            }
            try await group.waitForAll()
        }
        // SQLite never shrinks the file (it reuses it from the start): its size is the largest
        // the WAL has been.
        let walBytes = try #require(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)
        let written = writers * rowsEach * rowBytes
        await store.close()
        await database.destroy()

        #expect((restarts.withLock { $0 } ?? 0) >= 1)
        // Without restarts the WAL keeps nearly every page written (about 40 of these 49 MB).
        // With them it holds 256 pages and what the writer appends between two of the
        // checkpointer's passes, which come at most every 50 ms (4–6 MB here).
        #expect(walBytes < written / 3, "the WAL grew to \(walBytes) bytes for \(written) bytes written")
    }
}
