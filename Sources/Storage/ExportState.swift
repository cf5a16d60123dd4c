/// A run of a scheduled export the caller now holds (``ExportStateStore/claimExport(_:owner:now:leaseUntil:through:)``):
/// the window of rows it exports, `(after, through]` by the time each row last changed.
public struct ExportClaim: Sendable, Hashable {
    /// The committed watermark (epoch ms): rows changed up to it were exported; nil: never, so
    /// the run exports everything.
    public var after: Int64?
    /// The end of this run's window (epoch ms, inclusive). A run that failed left it stored, and its
    /// retry gets the same value, so it writes the same files again rather than different ones.
    public var through: Int64
    /// Failed runs since the last committed one.
    public var failures: Int
}

/// How a claimed run ended (``ExportStateStore/finishExport(_:owner:outcome:now:)``).
public enum ExportOutcome: Sendable, Hashable {
    /// Every file is stored: the watermark moves to the run's `through`; the next run is due at `nextRunAt`.
    case committed(nextRunAt: Int64)
    /// The run failed: the watermark stays, the window is kept for the retry due at `retryAt`.
    case failed(retryAt: Int64, error: String)
}

/// What the server knows about one export (for metrics and the console).
public struct ExportStatus: Sendable, Hashable {
    public var export: String
    public var watermark: Int64?
    public var nextRunAt: Int64
    public var failures: Int
    public var lastSuccessAt: Int64?
    /// The last failure's description, bounded; nil after a committed run.
    public var lastError: String?
    /// Whether a process holds the run's lease at the time asked.
    public var running: Bool
}

/// Scheduled exports' bookkeeping (table `export_state`): per export (named by its destination),
/// the watermark committed after the last complete run, when the next run is due, and the lease of
/// the one process running it.
///
/// The claim is one atomic upsert that succeeds only when the run is due and no unexpired lease is
/// held, so with several servers on one database each export runs at most once per interval. The
/// watermark moves only by the lease holder, only after every file of the run is stored: a run
/// that fails or dies is redone over the same window, never skipped.
public protocol ExportStateStore: Sendable {
    /// Claims the export `name` for `owner` until `leaseUntil` when its run is due at `now` (or it
    /// never ran) and nobody holds an unexpired lease. The window ends at `through` unless a failed
    /// run left its own end. Nil when the run is not due or another process holds it.
    func claimExport(_ name: String, owner: String, now: Int64, leaseUntil: Int64, through: Int64) async throws -> ExportClaim?

    /// Extends `owner`'s lease to `leaseUntil`; false when `owner` no longer holds it.
    func renewExportLease(_ name: String, owner: String, now: Int64, leaseUntil: Int64) async throws -> Bool

    /// Records how `owner`'s run ended and releases the lease; false (and nothing changes) when
    /// `owner` no longer holds it.
    func finishExport(_ name: String, owner: String, outcome: ExportOutcome, now: Int64) async throws -> Bool

    /// Every export's state, by name.
    func exportStatuses(now: Int64) async throws -> [ExportStatus]
}

extension SessionBackedStore {
    func claimExport(_ name: String, owner: String, now: Int64, leaseUntil: Int64, through: Int64) async throws -> ExportClaim? {
        return try await write { session in
            // The window never reaches back past the watermark (a clock set back must not make a
            // window that ends before it starts).
            try session.rows(
                """
                INSERT INTO export_state (export, watermark, pending_through, next_run_at, lease_owner, lease_expires_at, failures, updated_at)
                VALUES (\(name), NULL, \(through), \(now), \(owner), \(leaseUntil), 0, \(now))
                ON CONFLICT (export) DO UPDATE
                SET lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at, updated_at = excluded.updated_at,
                    pending_through = COALESCE(export_state.pending_through,
                        CASE WHEN export_state.watermark IS NULL OR export_state.watermark < excluded.pending_through
                            THEN excluded.pending_through ELSE export_state.watermark END)
                WHERE export_state.next_run_at <= excluded.updated_at
                    AND (export_state.lease_owner IS NULL OR export_state.lease_expires_at <= excluded.updated_at)
                RETURNING watermark, pending_through, failures
                """, as: ClaimedColumns.self
            ).first.map { ExportClaim(after: $0.watermark, through: $0.pendingThrough, failures: $0.failures) }
        }
    }

    func renewExportLease(_ name: String, owner: String, now: Int64, leaseUntil: Int64) async throws -> Bool {
        try await write { session in
            try !session.query(
                """
                UPDATE export_state SET lease_expires_at = \(leaseUntil), updated_at = \(now)
                WHERE export = \(name) AND lease_owner = \(owner)
                RETURNING export
                """).isEmpty
        }
    }

    func finishExport(_ name: String, owner: String, outcome: ExportOutcome, now: Int64) async throws -> Bool {
        let statement: SQLQuery =
            switch outcome {
            case .committed(let nextRunAt):
                """
                UPDATE export_state SET watermark = pending_through, pending_through = NULL, next_run_at = \(nextRunAt), failures = 0,
                    last_success_at = \(now), last_error = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = \(now)
                WHERE export = \(name) AND lease_owner = \(owner)
                RETURNING export
                """
            case .failed(let retryAt, let error):
                """
                UPDATE export_state SET next_run_at = \(retryAt), failures = failures + 1, last_error = \(String(error.prefix(1000))),
                    lease_owner = NULL, lease_expires_at = NULL, updated_at = \(now)
                WHERE export = \(name) AND lease_owner = \(owner)
                RETURNING export
                """
            }
        return try await write { session in try !session.query(statement).isEmpty }
    }

    func exportStatuses(now: Int64) async throws -> [ExportStatus] {
        return try await read { session in
            try session.rows(
                """
                SELECT export, watermark, next_run_at, failures, last_success_at, last_error, lease_expires_at FROM export_state ORDER BY export
                """, as: StatusColumns.self
            ).map {
                ExportStatus(
                    export: $0.export, watermark: $0.watermark, nextRunAt: $0.nextRunAt, failures: $0.failures, lastSuccessAt: $0.lastSuccessAt,
                    lastError: $0.lastError, running: ($0.leaseExpiresAt ?? now) > now)
            }
        }
    }
}

private struct ClaimedColumns: Decodable { var watermark: Int64?, pendingThrough: Int64, failures: Int }

private struct StatusColumns: Decodable {
    var export: String, watermark: Int64?, nextRunAt: Int64, failures: Int, lastSuccessAt: Int64?, lastError: String?
    var leaseExpiresAt: Int64?
}
