import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Storage

/// A job that is only queued, never run.
private final class QueuedJob: StorageJob, @unchecked Sendable {
    let isWrite: Bool
    init(isWrite: Bool) { self.isWrite = isWrite }
    func perform(_ session: any SQLSession) -> Bool { true }
    var failure: (any Error)? { nil }
    func finish(overriding error: (any Error)?) {}
}

/// Runs `body` on a thread of its own (it blocks) and returns its result.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// The SQLite writer and checkpointer wait for work instead of polling with
/// `usleep`, and Storage reports through an injected log, not the environment and stderr.
@Suite struct WaitingTests {
    @Test func aGatheringWriterWakesWhenAWriteArrivesNotAtItsDeadline() async {
        let queue = JobQueue()
        let arrived = DispatchSemaphore(value: 0)
        Thread {
            arrived.wait()
            _ = queue.enqueue(QueuedJob(isWrite: false))  // a read does not end the wait
            _ = queue.enqueue(QueuedJob(isWrite: true))
        }.start()
        let (taken, waited) = await onThread {
            let start = DispatchTime.now()
            arrived.signal()
            let taken = queue.takeMoreWrites(4, waitingUntil: .now() + .seconds(30))
            return (taken.count, DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds)
        }
        #expect(taken == 1)
        #expect(waited < 10_000_000_000, "woken by the write, long before the deadline")
        #expect(queue.count == 1, "the read stays queued")
    }

    @Test func aGatheringWriterGivesUpAtItsDeadlineAndOnClose() async {
        let queue = JobQueue()
        let (empty, waited) = await onThread {
            let start = DispatchTime.now()
            let taken = queue.takeMoreWrites(4, waitingUntil: .now() + .milliseconds(20))
            return (taken.isEmpty, DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds)
        }
        #expect(empty)
        #expect(waited >= 20_000_000)

        let started = DispatchSemaphore(value: 0)
        Thread {
            started.wait()
            queue.close()
        }.start()
        let closedEmpty = await onThread {
            started.signal()
            return queue.takeMoreWrites(4, waitingUntil: .now() + .seconds(30)).isEmpty
        }
        #expect(closedEmpty)
    }

    @Test func aDoorbellWakesOnRingKeepsARingThroughAPauseAndStopsOnClose() async {
        let bell = Doorbell()
        bell.ring()
        #expect(await onThread { bell.wait() } == .rung)
        #expect(await onThread { bell.wait(until: .now() + .milliseconds(10)) } == .deadline)
        // Rung during a pause: the pause lasts to its deadline, the ring waits for the next wait().
        let paused = await onThread {
            Thread { bell.ring() }.start()
            return bell.pause(until: .now() + .milliseconds(20))
        }
        #expect(paused == .deadline)
        #expect(await onThread { bell.wait() } == .rung)
        Thread { bell.close() }.start()
        #expect(await onThread { bell.wait() } == .closed)
        #expect(bell.pause(until: .now() + .seconds(30)) == .closed)
    }

    /// The idle interval is what is tested here, so this test sleeps (bounded, 300 ms): the old
    /// checkpointer woke every 50 ms whether or not anything was written.
    @Test func anIdleStoreRunsNoCheckpoint() async throws {
        let database = try TestDatabase(.sqliteFile)
        let store = try #require(try await database.open() as? SQLiteStore)
        try await store._execute("CREATE TABLE t (v INTEGER)")
        // The commit rings the checkpointer, which runs once (or twice: migration's commits too).
        #expect(await waitUntil { store.checkpoints.load(ordering: .relaxed) >= 1 })
        let settled = store.checkpoints.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        #expect(store.checkpoints.load(ordering: .relaxed) <= settled + 1)
        let before = store.checkpoints.load(ordering: .relaxed)
        try await store._execute("INSERT INTO t VALUES (1)")
        #expect(await waitUntil { store.checkpoints.load(ordering: .relaxed) > before })
        await store.close()
        await database.destroy()
    }

    @Test func aSQLiteFileStoreReportsItsCountersToTheInjectedLog() async throws {
        let database = try TestDatabase(.sqliteFile)
        let events = Mutex<[(String, [String: String])]>([])
        var configuration = database.configuration()
        configuration.log = { event, fields in events.withLock { $0.append((event, fields)) } }
        let store = try await openStore(url: database.url, configuration: configuration)
        try await store.raw("CREATE TABLE t (v INTEGER)")
        try await store.raw("INSERT INTO t VALUES (1)")
        await store.close()
        await database.destroy()
        let logged = events.withLock { $0 }
        let writer = try #require(logged.first { $0.0 == "sqlite writer" }?.1)
        #expect(Int(writer["jobs"] ?? "") ?? 0 >= 2)
        let syncer = try #require(logged.first { $0.0 == "sqlite syncer" }?.1)
        #expect(Int(syncer["fsyncs"] ?? "") ?? 0 >= 1)
    }

    /// Storage says what it has to say through ``StorageLog``: it reads no environment variable and
    /// writes to no standard stream (the old counters were `ENTITLED_STORAGE_DEBUG` and stderr).
    @Test func storageNeitherReadsTheEnvironmentNorPrints() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/Storage")
        let files = try #require(FileManager.default.enumerator(atPath: root.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for word in ["ProcessInfo", "print(", "standardError", "standardOutput", "usleep("] {
                // PostgreSQL's retry pauses sleep its own worker thread (see PostgresStore.run).
                if word == "usleep(" && file.hasPrefix("Postgres/") { continue }
                #expect(!text.contains(word), "\(file) uses \(word)")
            }
        }
    }
}


/// Polls `condition` every 5 ms until it holds (true) or 10 s pass (false).
func waitUntil(_ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
