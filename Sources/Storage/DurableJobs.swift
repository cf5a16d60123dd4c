/// A unit of background work that must survive a crash and a restart (table `jobs`): a backfill
/// of a subscription's history, an answer to a `CONSUMPTION_REQUEST`.
///
/// Jobs are identified by `(kind, key)`: enqueuing the same pair again changes nothing, so a job is
/// created at most once however often its cause repeats. A process runs a job only while it holds
/// the job's lease; a lease that expires (the process died) makes the job claimable again.
public struct DurableJob: Sendable, Hashable {
    public var id: Int64
    /// What to do, e.g. `backfill` (the runner dispatches on it).
    public var kind: String
    /// Unique per kind: the job's identity (e.g. the bundleId and originalTransactionId).
    public var key: String
    public var bundleId: String
    /// The object the job acts on (an originalTransactionId, a transactionId).
    public var subject: String
    public var status: DurableJobStatus
    /// Runs started so far.
    public var attempts: Int
    /// When the job is due (epoch ms): created, or retried after a failure.
    public var runAt: Int64
    /// The last failure's description, bounded; nil when none.
    public var lastError: String?
    public var createdAt: Int64
    public var updatedAt: Int64
    /// When the subject dates from (epoch ms; a purchase's time), nil when the job has none.
    public var subjectTime: Int64?
}

/// Where a job is in its life.
public enum DurableJobStatus: String, Sendable, Hashable, CaseIterable {
    /// Waiting for `runAt` (new, or retrying after a failure).
    case pending
    /// Claimed by a process whose lease has not expired.
    case running
    /// Finished.
    case done
    /// Given up on: a permanent error, or too many attempts.
    case failed
}

/// How a run of a job ended (``DurableJobStore/finishJob(_:owner:outcome:now:)``).
public enum DurableJobOutcome: Sendable, Hashable {
    case done
    /// Try again at `at` (epoch ms).
    case retry(at: Int64, error: String)
    case failed(error: String)
}

/// Durable job bookkeeping, on both SQLite and PostgreSQL.
public protocol DurableJobStore: Sendable {
    /// Creates the job `(kind, key)` due at `now` unless it exists already, and — when
    /// `unlessFactsOf` is given — unless the ledger holds a fact of that originalTransactionId.
    /// `subjectTime` is when the subject dates from (a purchase's time), by which
    /// ``unfinishedJobCount(kind:subjectTimes:)`` counts. Returns whether a job was created.
    func enqueueJob(
        kind: String, key: String, bundleId: String, subject: String, subjectTime: Int64?, now: Int64,
        unlessFactsOf originalTransactionId: String?
    ) async throws -> Bool

    /// Claims the due job with the earliest `runAt` (pending and due, or running with an expired
    /// lease) for `owner` until `leaseUntil`, counting an attempt. Nil when none is due. Atomic: two
    /// processes never claim the same job while its lease holds.
    func claimJob(owner: String, now: Int64, leaseUntil: Int64) async throws -> DurableJob?

    /// Records how `owner`'s run of job `id` ended; false when `owner` no longer holds its lease.
    func finishJob(_ id: Int64, owner: String, outcome: DurableJobOutcome, now: Int64) async throws -> Bool

    /// Jobs, newest first, optionally only those with `status`; at most `limit` (1…1000).
    func jobs(status: DurableJobStatus?, limit: Int) async throws -> [DurableJob]

    /// How many jobs of `kind` are not done (pending, running or failed) with a subject time in
    /// `subjectTimes`.
    func unfinishedJobCount(kind: String, subjectTimes: Range<Int64>) async throws -> Int
}

extension DurableJobStore {
    /// Creates a job whose subject has no time (see the requirement).
    public func enqueueJob(
        kind: String, key: String, bundleId: String, subject: String, now: Int64, unlessFactsOf originalTransactionId: String?
    ) async throws -> Bool {
        try await enqueueJob(
            kind: kind, key: key, bundleId: bundleId, subject: subject, subjectTime: nil, now: now, unlessFactsOf: originalTransactionId)
    }

    /// How many jobs of `kind` are not done whose subject is at least `warning` but less than
    /// `deadline` old at `now` (milliseconds): the ones close to a deadline a store sets.
    public func unfinishedJobCount(kind: String, agedFrom warning: Int64, under deadline: Int64, now: Int64) async throws -> Int {
        // Subject times t with warning ≤ now - t < deadline.
        try await unfinishedJobCount(kind: kind, subjectTimes: (now - deadline + 1)..<(now - warning + 1))
    }
}


extension SessionBackedStore {
    static var jobColumns: SQLQuery {
        "id, kind, job_key, bundle_id, subject, status, attempts, run_at, last_error, created_at, updated_at, subject_time"
    }

    static func decodeJob(_ row: SQLRow) throws -> DurableJob {
        let job = try row.decode(JobColumns.self)
        return DurableJob(
            id: job.id, kind: job.kind, key: job.jobKey, bundleId: job.bundleId, subject: job.subject,
            status: DurableJobStatus(rawValue: job.status) ?? .failed, attempts: job.attempts, runAt: job.runAt,
            lastError: job.lastError, createdAt: job.createdAt, updatedAt: job.updatedAt, subjectTime: job.subjectTime)
    }

    func enqueueJob(
        kind: String, key: String, bundleId: String, subject: String, subjectTime: Int64?, now: Int64,
        unlessFactsOf originalTransactionId: String?
    ) async throws -> Bool {
        try await write { session in
            let rows = try session.query(
                """
                INSERT INTO jobs (kind, job_key, bundle_id, subject, status, attempts, run_at, created_at, updated_at, subject_time)
                SELECT CAST(\(kind) AS TEXT), CAST(\(key) AS TEXT), CAST(\(bundleId) AS TEXT), CAST(\(subject) AS TEXT), 'pending', 0,
                    CAST(\(now) AS BIGINT), CAST(\(now) AS BIGINT), CAST(\(now) AS BIGINT), CAST(\(subjectTime) AS BIGINT)
                WHERE \(originalTransactionId ?? "") = '' OR NOT EXISTS (SELECT 1 FROM facts WHERE original_transaction_id = \(originalTransactionId ?? ""))
                ON CONFLICT (kind, job_key) DO NOTHING
                RETURNING id
                """)
            return !rows.isEmpty
        }
    }

    func claimJob(owner: String, now: Int64, leaseUntil: Int64) async throws -> DurableJob? {
        try await write { session in
            // The due condition is repeated outside the subquery: on PostgreSQL a second claimer
            // blocked on the row re-checks it against the first claimer's update and gets nothing.
            try session.query(
                """
                UPDATE jobs SET status = 'running', lease_owner = \(owner), lease_expires_at = \(leaseUntil), attempts = attempts + 1, updated_at = \(now)
                WHERE id = (
                    SELECT id FROM jobs
                    WHERE (status = 'pending' AND run_at <= \(now)) OR (status = 'running' AND lease_expires_at <= \(now))
                    ORDER BY run_at, id LIMIT 1)
                AND ((status = 'pending' AND run_at <= \(now)) OR (status = 'running' AND lease_expires_at <= \(now)))
                RETURNING \(Self.jobColumns)
                """).first.map(Self.decodeJob)
        }
    }

    func finishJob(_ id: Int64, owner: String, outcome: DurableJobOutcome, now: Int64) async throws -> Bool {
        let (status, runAt, error): (DurableJobStatus, Int64?, String?) =
            switch outcome {
            case .done: (.done, nil, nil)
            case .retry(let at, let error): (.pending, at, error)
            case .failed(let error): (.failed, nil, error)
            }
        return try await write { session in
            try !session.query(
                """
                UPDATE jobs SET status = \(status.rawValue), run_at = COALESCE(\(runAt), run_at), last_error = \(error.map { String($0.prefix(1000)) }), lease_owner = NULL,
                    lease_expires_at = NULL, updated_at = \(now)
                WHERE id = \(id) AND lease_owner = \(owner) AND status = 'running'
                RETURNING id
                """).isEmpty
        }
    }

    func jobs(status: DurableJobStatus?, limit: Int) async throws -> [DurableJob] {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        return try await read { session in
            try session.query(
                """
                SELECT \(Self.jobColumns) FROM jobs WHERE \(status?.rawValue ?? "") = '' OR status = \(status?.rawValue ?? "") ORDER BY id DESC LIMIT \(Int64(limit))
                """).map(Self.decodeJob)
        }
    }

    func unfinishedJobCount(kind: String, subjectTimes: Range<Int64>) async throws -> Int {
        try await read { session in
            Int(
                try session.value(
                    """
                    SELECT count(*) FROM jobs
                    WHERE kind = \(kind) AND subject_time >= \(subjectTimes.lowerBound) AND subject_time < \(subjectTimes.upperBound)
                        AND status <> 'done'
                    """, as: Int64.self) ?? 0)
        }
    }
}

/// A job's columns (``SessionBackedStore/jobColumns``).
private struct JobColumns: Decodable {
    var id: Int64
    var kind: String
    var jobKey: String
    var bundleId: String
    var subject: String
    var status: String
    var attempts: Int
    var runAt: Int64
    var lastError: String?
    var createdAt: Int64
    var updatedAt: Int64
    var subjectTime: Int64?
}
