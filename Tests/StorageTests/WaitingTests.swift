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

/// Issue 14 item 7: the SQLite writer and checkpointer wait for work instead of polling with `usleep`.
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
