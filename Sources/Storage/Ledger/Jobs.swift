import Dispatch
import Foundation
import Synchronization

/// A unit of work for a storage thread (the SQLite writer or a PostgreSQL pool worker).
///
/// Database drivers block, so they never run on Swift's cooperative pool: callers suspend on a
/// continuation while a dedicated thread runs the job. A job is created by the caller, handed
/// over through ``JobQueue``'s lock and from then on touched only by the one thread that took it,
/// which is what `@unchecked Sendable` stands for.
protocol StorageJob: AnyObject, Sendable {
    /// Writes are grouped into one transaction (group commit); reads run alone.
    var isWrite: Bool { get }
    /// Runs the body, keeping its result. Returns false when the body threw.
    func perform(_ session: any SQLSession) -> Bool
    /// The error the body threw, if it did.
    var failure: (any Error)? { get }
    /// Resumes the caller with the body's result, or with `error` when the whole group failed.
    func finish(overriding error: (any Error)?)
    /// A read of one customer on a PostgreSQL replica: what the replica must have (nil: this
    /// process's last commit is enough).
    var replicaNeed: ReplicaNeed? { get }
}

extension StorageJob {
    var replicaNeed: ReplicaNeed? { nil }
}

final class Job<T: Sendable>: StorageJob, @unchecked Sendable {
    let isWrite: Bool
    let replicaNeed: ReplicaNeed?
    private let body: @Sendable (any SQLSession) throws -> T
    private var continuation: CheckedContinuation<T, any Error>?
    private var result: Result<T, any Error>?

    init(
        isWrite: Bool, replicaNeed: ReplicaNeed? = nil, body: @escaping @Sendable (any SQLSession) throws -> T,
        continuation: CheckedContinuation<T, any Error>
    ) {
        self.isWrite = isWrite
        self.replicaNeed = replicaNeed
        self.body = body
        self.continuation = continuation
    }

    func perform(_ session: any SQLSession) -> Bool {
        do {
            result = .success(try body(session))
            return true
        } catch {
            result = .failure(error)
            return false
        }
    }

    var failure: (any Error)? {
        if case .failure(let error) = result { return error }
        return nil
    }

    func finish(overriding error: (any Error)?) {
        guard let continuation else { return }
        self.continuation = nil
        if let error {
            continuation.resume(throwing: error)
        } else if let result {
            continuation.resume(with: result)
        } else {
            continuation.resume(throwing: StorageError(.internal, "job finished without running"))
        }
    }
}

/// A blocking multi-producer, multi-consumer queue of jobs for storage threads.
final class JobQueue: Sendable {
    private struct State {
        var jobs: [any StorageJob] = []
        var closed = false
        var sleepers = 0
    }

    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Rung for each queued write: wakes the one thread in ``takeMoreWrites(_:waitingUntil:)``.
    private let writeArrived = Doorbell()

    /// Queues a job; false when the queue is closed.
    func enqueue(_ job: any StorageJob) -> Bool {
        let (accepted, wake) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.jobs.append(job)
            guard state.sleepers > 0 else { return (true, false) }
            state.sleepers -= 1
            return (true, true)
        }
        if accepted && job.isWrite { writeArrived.ring() }
        if wake { wakeUp.signal() }
        return accepted
    }

    /// Blocks until work is available and takes it: the first job and, when it is a write, up to
    /// `maxWrites - 1` further queued writes (the group commit). With `groupReads`, queued reads are
    /// taken too. Returns nil once the queue is closed and empty.
    func take(maxWrites: Int, groupReads: Bool) -> [any StorageJob]? {
        while true {
            let taken = state.withLock { state -> [any StorageJob]?? in
                if !state.jobs.isEmpty {
                    return .some(Self.split(&state.jobs, maxWrites: maxWrites, groupReads: groupReads))
                }
                if state.closed { return .some(nil) }
                state.sleepers += 1
                return nil
            }
            if let taken { return taken }
            wakeUp.wait()
        }
    }

    /// Takes up to `maxWrites` queued writes, waiting until `deadline` for a first one to arrive
    /// (to grow a group commit). Returns empty only at the deadline or once the queue is closed.
    /// One thread at a time may wait here (the SQLite writer); an enqueued write wakes it at once.
    func takeMoreWrites(_ maxWrites: Int, waitingUntil deadline: DispatchTime) -> [any StorageJob] {
        guard maxWrites > 0 else { return [] }
        while true {
            let (writes, done) = state.withLock { state in
                (Self.takeWrites(&state.jobs, maxWrites), state.closed)
            }
            if !writes.isEmpty || done || DispatchTime.now() >= deadline { return writes }
            // A write queued since the check above has rung already: the wait returns at once.
            _ = writeArrived.wait(until: deadline)
        }
    }

    private static func takeWrites(_ jobs: inout [any StorageJob], _ maxWrites: Int) -> [any StorageJob] {
        guard jobs.contains(where: \.isWrite) else { return [] }
        var taken: [any StorageJob] = []
        var rest: [any StorageJob] = []
        for job in jobs {
            if job.isWrite && taken.count < maxWrites { taken.append(job) } else { rest.append(job) }
        }
        jobs = rest
        return taken
    }

    /// The number of queued jobs.
    var count: Int { state.withLock { $0.jobs.count } }

    private static func split(_ jobs: inout [any StorageJob], maxWrites: Int, groupReads: Bool) -> [any StorageJob] {
        var batch: [any StorageJob] = []
        var rest: [any StorageJob] = []
        let firstIsWrite = jobs[0].isWrite
        var writes = 0
        for job in jobs {
            if batch.isEmpty {
                batch.append(job)
                if job.isWrite { writes += 1 }
            } else if job.isWrite && firstIsWrite && writes < maxWrites {
                batch.append(job)
                writes += 1
            } else if !job.isWrite && groupReads {
                batch.append(job)
            } else {
                rest.append(job)
            }
        }
        jobs = rest
        return batch
    }

    /// Refuses new jobs; consumers drain what is queued, then `take` returns nil.
    func close() {
        let sleepers = state.withLock { state -> Int in
            state.closed = true
            defer { state.sleepers = 0 }
            return state.sleepers
        }
        writeArrived.close()
        for _ in 0..<sleepers { wakeUp.signal() }
    }
}

/// Counts running storage threads so `close()` can wait for all of them.
final class ThreadTracker: Sendable {
    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Starts a dedicated thread running `body`.
    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.running += 1 }
        let thread = Thread { [self] in
            body()
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.running -= 1
                guard state.running == 0 else { return [] }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = name
        thread.start()
    }

    /// Waits until every started thread has returned.
    func waitForAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.running == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
