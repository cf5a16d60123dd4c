import Foundation

// What the ledger reports back: failed projections, rebuilds, integrity checks, migrations.

/// A customer whose projection failed, and why (the projector's error, for operators' logs).
public struct ProjectionFailure: Sendable, Hashable {
    /// The customer.
    public var appUserId: String
    /// The projector's error as text, at most ``ProjectionFailure/maxReasonBytes`` bytes.
    public var reason: String

    /// Longest reason stored (the error text is cut there).
    public static let maxReasonBytes = 1024

    /// Creates a failure report, cutting `reason` to ``maxReasonBytes``.
    public init(appUserId: String, reason: String) {
        self.appUserId = appUserId
        var cut = Substring(reason)
        while cut.utf8.count > Self.maxReasonBytes { cut = cut.dropLast() }
        self.reason = String(cut)
    }
}

/// What ``LedgerStore/rebuild(projector:now:)`` found.
public struct RebuildReport: Sendable, Hashable {
    /// Customers recomputed.
    public var customers: Int
    /// Customers whose stored projection differed from the recomputed one (and was replaced).
    public var differences: Int
    /// Those customers' `appUserId`s, sorted.
    public var changedCustomers: [String]
    /// Customers that could not be projected, by `appUserId`: each is marked failed and the
    /// others were still rebuilt.
    public var failedCustomers: [ProjectionFailure]

    /// Creates a report.
    public init(customers: Int, differences: Int, changedCustomers: [String], failedCustomers: [ProjectionFailure] = []) {
        self.customers = customers
        self.differences = differences
        self.changedCustomers = changedCustomers
        self.failedCustomers = failedCustomers
    }
}

/// What ``LedgerStore/backup(to:)`` wrote.
public struct BackupReport: Sendable, Hashable {
    /// The copy's path.
    public var path: String
    /// Its size in bytes.
    public var bytes: Int64

    /// Creates a report.
    public init(path: String, bytes: Int64) {
        self.path = path
        self.bytes = bytes
    }
}

/// What ``LedgerStore/checkIntegrity(full:timeLimit:)`` found.
public struct IntegrityReport: Sendable, Hashable {
    /// The check run: `quick_check`, `integrity_check`, or `none` where the database checks its
    /// own pages (PostgreSQL).
    public var check: String
    /// The database's own findings (at most 100); empty when none.
    public var problems: [String]
    /// False when the time limit stopped the check before it finished (nothing found so far).
    public var complete: Bool

    /// Creates a report.
    public init(check: String, problems: [String], complete: Bool) {
        self.check = check
        self.problems = problems
        self.complete = complete
    }
}

/// What is at a SQLite database path before it is opened.
public enum SQLiteFileState: Sendable, Hashable {
    /// No file: a new database is created.
    case missing
    /// A 0-byte file: SQLite treats it as a new, empty database.
    case empty
    /// A file of this many bytes.
    case existing(bytes: Int64)

    /// The state of the file at `path`.
    public init(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            self = .missing
            return
        }
        self = status.st_size == 0 ? .empty : .existing(bytes: Int64(status.st_size))
    }
}

/// What ``LedgerStore/migrate()`` did.
public struct MigrationReport: Sendable, Hashable {
    /// Versions applied by this call, in order.
    public var applied: [Int]
    /// The schema version now in the database.
    public var currentVersion: Int

    /// Creates a report.
    public init(applied: [Int], currentVersion: Int) {
        self.applied = applied
        self.currentVersion = currentVersion
    }
}
