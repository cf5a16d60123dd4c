import AppStore
import AppStoreServerAPI
import Foundation
import Storage

/// Why a job's run failed: retried with backoff when ``retryable``, else the job is given up.
public struct JobFailure: Error, Sendable, CustomStringConvertible {
    public var retryable: Bool
    public var message: String

    public init(retryable: Bool, _ message: String) {
        self.retryable = retryable
        self.message = message
    }

    public var description: String { message }
}

/// What ``JobRunner/runDue(limit:)`` did.
public struct JobRunReport: Sendable, Equatable {
    public var done = 0
    /// Failed, to be tried again after a backoff.
    public var retried = 0
    /// Given up on (status `failed`).
    public var failed = 0

    public init() {}
}

/// Runs durable jobs (``DurableJobStore``): claims the due ones under a lease — so one process
/// runs each, also with several servers on one PostgreSQL — runs them by kind, and records the
/// outcome; a failed run is retried with exponential backoff up to ``maxAttempts``.
public struct JobRunner: Service {
    /// How long a claimed job stays this process's without being finished.
    public static let leaseMilliseconds: Int64 = 10 * 60_000
    /// Runs of a job before it is given up.
    public static let maxAttempts = 10
    /// How often `serve` looks for due jobs.
    public static let pollMilliseconds: Int64 = 5_000

    let jobs: any DurableJobStore
    let clock: any EpochClock
    let owner: String
    let handlers: [String: @Sendable (DurableJob) async throws(JobFailure) -> Void]
    /// Run after each pass of ``run(sleeper:)`` with the time (epoch ms), e.g. to refresh a gauge of the jobs.
    let afterPass: (@Sendable (Int64) async throws -> Void)?

    init(
        jobs: any DurableJobStore, clock: any EpochClock, owner: String = UUID().uuidString,
        handlers: [String: @Sendable (DurableJob) async throws(JobFailure) -> Void],
        afterPass: (@Sendable (Int64) async throws -> Void)? = nil
    ) {
        self.jobs = jobs
        self.clock = clock
        self.owner = owner
        self.handlers = handlers
        self.afterPass = afterPass
    }

    /// The wait before the run after failed run number `attempts` (1, 2, …): 30 s doubling per
    /// attempt, at most 6 hours, so ten attempts span about a day.
    public static func backoffMilliseconds(afterAttempt attempts: Int) -> Int64 {
        let doubled = Int64(30_000) << Int64(min(max(attempts - 1, 0), 20))
        return min(doubled, 6 * 3_600_000)
    }

    /// Runs due jobs until none is due (at most `limit` runs).
    /// - Throws: a storage error while claiming or finishing (the jobs stay for a later run).
    @discardableResult
    public func runDue(limit: Int = 1000) async throws -> JobRunReport {
        var report = JobRunReport()
        for _ in 0..<limit {
            let now = clock.nowMilliseconds()
            guard let job = try await jobs.claimJob(owner: owner, now: now, leaseUntil: now + Self.leaseMilliseconds) else { break }
            let outcome: DurableJobOutcome
            do throws(JobFailure) {
                guard let handler = handlers[job.kind] else { throw JobFailure(retryable: false, "no handler for job kind \(job.kind)") }
                try await handler(job)
                outcome = .done
                report.done += 1
            } catch {
                let finished = clock.nowMilliseconds()
                if error.retryable && job.attempts < Self.maxAttempts {
                    outcome = .retry(at: finished + Self.backoffMilliseconds(afterAttempt: job.attempts), error: error.message)
                    report.retried += 1
                } else {
                    outcome = .failed(error: error.message)
                    report.failed += 1
                }
                ServerLog.event(
                    "job failed", ["kind": job.kind, "id": "\(job.id)", "attempt": "\(job.attempts)", "error": error.message],
                    level: .error)
            }
            _ = try await jobs.finishJob(job.id, owner: owner, outcome: outcome, now: clock.nowMilliseconds())
        }
        return report
    }

    /// Runs due jobs every ``pollMilliseconds`` of real time until the task is cancelled.
    public func run() async {
        await run(sleeper: TaskSleeper())
    }

    /// Runs due jobs every ``pollMilliseconds`` on `sleeper` until the task is cancelled.
    public func run(sleeper: any Sleeper) async {
        while !Task.isCancelled {
            do {
                try await runDue()
                try await afterPass?(clock.nowMilliseconds())
            } catch {
                ServerLog.event("jobs could not be read", ["error": "\(error)"], level: .error)
            }
            do {
                try await sleeper.sleep(milliseconds: Self.pollMilliseconds)
            } catch {
                return
            }
        }
    }
}
