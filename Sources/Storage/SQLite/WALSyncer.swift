import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes the SQLite writer's commits durable off the writer thread.
///
/// The writer commits with `synchronous=NORMAL`: when `COMMIT` returns, the group's WAL frames
/// have been written with write(2) but not fsynced. The writer hands the group here and starts
/// on the next one at once; this thread fsyncs the WAL and only then resumes the group's callers,
/// so nobody is answered before their commit is on disk — the guarantee `synchronous=FULL` gives,
/// without the writer sitting idle through every fsync. One fsync covers every group committed
/// before it began, so groups that pile up during a sync share the next one.
///
/// Readers may see a group's rows before its fsync has finished. That is harmless: nothing was
/// acknowledged yet, and a retried delivery that finds the row waits for a later fsync, which
/// covers the earlier write too.
///
/// After a failed fsync the kernel may have dropped the dirty pages, so a later successful fsync
/// proves nothing: from then on every write fails (the store must be reopened).
final class WALSyncer: Sendable {
    private struct State {
        var pending: [[any StorageJob]] = []
        var closed = false
        var sleeping = false
    }

    /// Counters, reported at close to the store's ``StorageLog`` (benchmarks print them).
    private struct Stats {
        var syncs = 0
        var groups = 0
        var nanoseconds: UInt64 = 0
    }

    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let walPath: String
    private let failed = Atomic<Bool>(false)
    private let log: StorageLog?

    /// - Parameters:
    ///   - databasePath: the database file; its WAL is `databasePath + "-wal"`.
    ///   - log: where the counters go at close.
    init(databasePath: String, log: StorageLog?) {
        walPath = databasePath + "-wal"
        self.log = log
    }

    /// Queues a committed group; its jobs are finished after the next fsync.
    func submit(_ jobs: [any StorageJob]) {
        let wake = state.withLock { state -> Bool in
            state.pending.append(jobs)
            guard state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if wake { wakeUp.signal() }
    }

    /// Lets the thread finish what is queued and return.
    func close() {
        let wake = state.withLock { state -> Bool in
            state.closed = true
            defer { state.sleeping = false }
            return state.sleeping
        }
        if wake { wakeUp.signal() }
    }

    /// The syncing thread's body: returns after ``close()`` once everything queued is finished.
    func run() {
        var file = WALFile(path: walPath)
        var stats = Stats()
        defer { file.close() }
        while let groups = take() {
            let start = DispatchTime.now().uptimeNanoseconds
            var error: StorageError?
            if failed.load(ordering: .acquiring) {
                error = StorageError(.unavailable, "an earlier fsync of the WAL failed; reopen the store")
            } else if let failure = file.sync() {
                failed.store(true, ordering: .releasing)
                error = failure
            }
            stats.syncs += 1
            stats.groups += groups.count
            stats.nanoseconds += DispatchTime.now().uptimeNanoseconds - start
            for group in groups {
                for job in group { job.finish(overriding: error) }
            }
        }
        if let log, stats.syncs > 0 {
            log(
                "sqlite syncer",
                [
                    "groups": "\(stats.groups)", "fsyncs": "\(stats.syncs)",
                    "microsecondsPerFsync": "\(stats.nanoseconds / UInt64(stats.syncs) / 1000)",
                ])
        }
    }

    /// Blocks until groups are queued and takes them all; nil once closed and drained.
    private func take() -> [[any StorageJob]]? {
        while true {
            let taken = state.withLock { state -> [[any StorageJob]]?? in
                if !state.pending.isEmpty {
                    defer { state.pending = [] }
                    return .some(state.pending)
                }
                if state.closed { return .some(nil) }
                state.sleeping = true
                return nil
            }
            if let taken { return taken }
            wakeUp.wait()
        }
    }
}

/// The WAL file, opened by the syncer on first use and reopened if the path names a new file
/// (SQLite recreates the WAL only when every connection has closed it, so this is a safeguard).
private struct WALFile {
    let path: String
    private var descriptor: Int32 = -1
    private var inode: UInt64 = 0

    init(path: String) { self.path = path }

    /// fsyncs the WAL's data (and the size needed to read it back); nil on success.
    mutating func sync() -> StorageError? {
        var info = stat()
        guard stat(path, &info) == 0 else { return failure("stat") }
        if descriptor < 0 || UInt64(info.st_ino) != inode {
            close()
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return failure("open") }
            inode = UInt64(info.st_ino)
        }
        while true {
            #if canImport(Glibc)
                let rc = fdatasync(descriptor)
            #else
                let rc = fsync(descriptor)
            #endif
            if rc == 0 { return nil }
            if errno != EINTR { return failure("fsync") }
        }
    }

    mutating func close() {
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
        descriptor = -1
    }

    private func failure(_ call: String) -> StorageError {
        let code = errno
        return StorageError(
            .unavailable, "the WAL could not be synced", detail: "\(call) \(path): \(String(cString: strerror(code)))")
    }
}

private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
        return Glibc.close(descriptor)
    #else
        return Darwin.close(descriptor)
    #endif
}
