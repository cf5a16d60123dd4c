import Entitlements

/// The store: the durable ledger (append-only facts, customers and their links, projections)
/// and every other record the server keeps — the event outbox and its holds, webhook deliveries,
/// durable jobs, console queries and metric rollups, the customer directory, consent,
/// reconciliation state, offer signatures, consumable spends, customer attributes, offerings, the signed texts, the retention-request
/// log, the placeholder backfill and scheduled exports' state and readers. Each of those is a protocol of its own (what it is about,
/// documented where it is declared); this one refines them all, so whoever holds a store has every
/// capability.
///
/// Every write is one database transaction; a returned value means it is committed durably (on
/// SQLite with the WAL fsynced before any answer, on PostgreSQL with the server's `fsync`).
/// Implementations: SQLite (embedded default) and PostgreSQL (scale-out); open one with
/// ``openStore(url:configuration:)``.
public protocol LedgerStore:
    EventStore, EventHoldStore, WebhookDeliveryStore, DurableJobStore, ConsoleStore, CustomerDirectory, ConsentStore,
    ReconcileStateStore, OfferSignatureLog, ConsumableSpending, SignedLedger, RetentionLog, PlaceholderBackfillStore,
    ExportStateStore, ExportReader, CustomerAttributeStore, OfferingStore, ExperimentStore, PlayOrderStore,
    PlayRefundReviewStore
{
    /// Stored projections counted by customer state and subscription status (one query; for
    /// metrics gauges, then kept current from ``LedgerObserver/projectionsChanged(_:)``).
    func projectionTally() async throws -> ProjectionTally

    /// Applies pending schema migrations, recording each in `schema_migrations`.
    /// - Throws: ``StorageError`` `SCHEMA_TOO_NEW` when the database was migrated by a newer binary.
    @discardableResult
    func migrate() async throws -> MigrationReport

    /// Stores a received message and its facts, links customers and recomputes the projections of
    /// every affected customer — all in one transaction.
    ///
    /// A repeated `notificationUUID` returns ``IngestResult/Status/duplicate`` and changes nothing;
    /// a replayed fact is a no-op.
    /// - Parameters:
    ///   - message: The message as received.
    ///   - facts: The engine's facts verified from it, each with the signed text it came from (nil
    ///     for a fact without a signed form: its `Fact.identity` keys it).
    ///   - claim: For a client post: link the facts' subscriptions to this customer; facts without
    ///     one (an app transaction) get the customer's token.
    ///   - projector: How the facts are encoded and evaluated.
    ///   - now: The current time (ms) the projections are evaluated at.
    func ingest(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim?, projector: Projector, now: Int64
    ) async throws -> IngestResult

    /// Records a rejected message for audit; nothing is applied. Its `notificationUUID` is kept
    /// for audit but does not take the unique slot, so a forged message cannot block the real one.
    /// Only the body's first ``ReceivedMessage/maxRejectedBodyBytes`` bytes are kept, with its
    /// SHA-256 and size.
    /// - Parameter code: The rejection code (e.g. `SIGNATURE_INVALID`).
    /// - Returns: The row id.
    @discardableResult
    func recordRejected(_ message: ReceivedMessage, code: String) async throws -> Int64

    /// Deletes the rejected messages received before `cutoff` (ms), in bounded transactions, and
    /// returns how many. Accepted messages are never deleted.
    @discardableResult
    func purgeRejected(receivedBefore cutoff: Int64) async throws -> Int

    /// Reads a customer.
    func customer(appUserId: String) async throws -> CustomerRecord?

    /// Returns the customer, creating it when missing with a stable `appAccountToken`
    /// (the given one, or a random UUID). On creation, facts already in the ledger that carry
    /// the token are linked (from their placeholder too) and the projection is computed; their
    /// events are released (or held) for the customer, a placeholder's superseded by a correction.
    func ensureCustomer(
        appUserId: String, appAccountToken: String?, projector: Projector, now: Int64
    ) async throws -> CustomerRecord

    /// The customer's stored projection (the API's hot read: one statement, indexed lookups).
    func projection(appUserId: String) async throws -> StoredProjection?

    /// Recomputes and stores one customer's projection (e.g. when its state was stored before
    /// storage kept its own encoding) and returns it; nil when there is no such customer.
    func reproject(appUserId: String, projector: Projector, now: Int64) async throws -> StoredProjection?

    /// Stores the reader's `answer` beside the customer's state ``StoredProjection/document`` it
    /// was rendered from, for later reads (``StoredProjection/answer``, ``stateNow(appUserId:)``)
    /// until the state changes. Storage keeps the bytes as they are and never reads them.
    /// - Returns: false, writing nothing, when the stored state is no longer `document`.
    @discardableResult
    func storeAnswer(_ answer: [UInt8], appUserId: String, document: [UInt8]) async throws -> Bool

    /// The customer's stored answer alone (no state, no projection rows), on the calling thread,
    /// when the backend can read it at once (SQLite on a file: a microsecond-scale lookup on a
    /// pooled read connection). `.wouldWait` (PostgreSQL's round trip, SQLite in memory, a closed
    /// store) means: use ``projection(appUserId:)``.
    func stateNow(appUserId: String) throws -> ImmediateRead<StoredState?>

    /// A mark of everything committed to the database, on the calling thread, when the backend can
    /// read it at once: two equal marks from one store mean that no transaction committed between
    /// the two reads, by any connection or process (SQLite on a file: the header of its WAL index,
    /// which every commit rewrites, read in place; `PRAGMA data_version` on a connection of the
    /// store's own that never writes where the index cannot be mapped). So whatever was read
    /// after a mark still holds while the store answers that mark. `.wouldWait` (PostgreSQL,
    /// which other servers write; SQLite in memory; a closed store; a writer rewriting the header
    /// just then): no mark, nothing read can be vouched for.
    func changeMarkNow() throws -> ImmediateRead<Int64>

    /// All facts of a customer, ordered by `signedDate` then id (what the projections evaluate),
    /// decoded by `projector`.
    func facts(appUserId: String, projector: Projector) async throws -> [StoredFact]

    /// The customer's notifications and facts, newest first.
    /// - Parameters:
    ///   - cursor: ``HistoryPage/nextCursor`` of the previous page, or nil.
    ///   - limit: 1…1000.
    func history(appUserId: String, cursor: String?, limit: Int) async throws -> HistoryPage

    /// A subscription's projection and owner.
    func subscription(originalTransactionId: String) async throws -> OwnedSubscription?

    /// When the notification Apple numbered `notificationUUID` was committed here (epoch ms), nil
    /// when it never was (a rejected one does not count).
    func notificationReceivedAt(notificationUUID: String) async throws -> Int64?

    /// Checks that the database answers (for `/readyz`).
    func ping() async throws

    /// Looks for damaged pages: SQLite's `PRAGMA quick_check` (`full`: `integrity_check`), stopped
    /// after `timeLimit` (nil: none), on a connection of its own. PostgreSQL checks its own pages
    /// (checksums, WAL) and reports check `none`.
    func checkIntegrity(full: Bool, timeLimit: Duration?) async throws -> IntegrityReport

    /// Recomputes every projection from the ledger, replaces those that differ and reports them.
    func rebuild(projector: Projector, now: Int64) async throws -> RebuildReport

    /// Recomputes every projection as ``rebuild(projector:now:)`` does, each at the instant it was
    /// stored with, and reports those that differ (``RebuildReport/changedCustomers``) and those
    /// that cannot be projected, writing nothing. Each chunk of customers is read in one read-only
    /// transaction, so it can run while the server writes.
    func compareProjections(projector: Projector) async throws -> RebuildReport

    /// Writes a consistent copy of the database to a new file at `path` while the store keeps
    /// serving, fsynced (the file and its folder) before it returns. SQLite only: the copy is made
    /// with `VACUUM INTO` from one read snapshot, into `PATH.partial`, then renamed.
    /// - Throws: ``StorageError`` `INVALID_ARGUMENT` when `path` exists; `UNSUPPORTED` on
    ///   PostgreSQL (use `pg_dump` or a base backup).
    func backup(to path: String) async throws -> BackupReport

    /// Finishes queued work and closes every connection. Later calls throw `STORE_CLOSED`.
    func close() async
}

extension LedgerStore {
    /// Reads a customer, creating it when `createIfMissing` is true.
    public func customer(
        appUserId: String, createIfMissing: Bool, projector: Projector, now: Int64
    ) async throws -> CustomerRecord? {
        if let existing = try await customer(appUserId: appUserId) { return existing }
        guard createIfMissing else { return nil }
        return try await ensureCustomer(appUserId: appUserId, appAccountToken: nil, projector: projector, now: now)
    }
}

/// Options for opening a store. Defaults suit production.
public struct StoreConfiguration: Sendable {
    /// Apply pending migrations when opening (start-up). When false the schema version is
    /// still checked and a too-new schema refused. Default true.
    public var migrateOnOpen: Bool = true
    /// SQLite: read connections kept open (WAL lets them read while the writer writes). Default 4.
    public var sqliteReadConnections: Int = 4
    /// SQLite: how long a connection waits for a lock held by another process (ms). Default 5000.
    public var sqliteBusyTimeoutMilliseconds: Int = 5000
    /// SQLite: how long the writer keeps asking for the write lock while another process holds
    /// it, each try waiting out the busy timeout, before it fails the ingests waiting on it (ms;
    /// with no busy timeout it asks once). Default 30000.
    public var sqliteWriteLockWaitMilliseconds: Int = 30_000
    /// SQLite: most ingests committed together in one group commit. Default 256.
    public var maxGroupCommit: Int = 256
    /// PostgreSQL: most ingests one pool connection commits together. Smaller than SQLite's,
    /// so that concurrent ingests spread over the pool's connections and run in parallel on the
    /// server rather than queue behind one connection. Default 8.
    public var postgresGroupCommit: Int = 8
    /// PostgreSQL: connections in the pool, each on its own thread. Default 8.
    public var postgresConnections: Int = 8
    /// PostgreSQL: streaming replicas (libpq URIs) for reads. A read goes to a replica only once
    /// it has replayed this process's last commit (``PostgresStore``), else to the primary.
    public var postgresReplicas: [String] = []
    /// PostgreSQL with replicas: whose writes a customer read must see. Default ``ReadYourWrites/allServers``.
    public var readYourWrites: ReadYourWrites = .allServers
    /// PostgreSQL: a schema to use (created when missing) instead of `public`; tests use one per test.
    /// Letters, digits and `_` only.
    public var postgresSchema: String? = nil
    /// PostgreSQL: the session's `statement_timeout` (ms), and, plus a margin of as much again
    /// (at most 1 s), the longest any call waits for the server's answer before it gives the
    /// connection up and fails with `STORAGE_UNAVAILABLE` (a frozen or unreachable server).
    /// Default 5000.
    public var postgresStatementTimeoutMilliseconds: Int = 5000
    /// PostgreSQL: libpq's `connect_timeout` (s, at least 2; a `connect_timeout` in the URL wins). Default 5.
    public var postgresConnectTimeoutSeconds: Int = 5
    /// PostgreSQL: transaction attempts on serialization failure or deadlock. Default 5.
    public var postgresTransactionAttempts: Int = 5
    /// Where Storage reports events (the SQLite writer's counters at close); nil says nothing.
    public var log: StorageLog? = nil
    /// Test hook: called at each ``FaultPoint`` inside write transactions.
    public var faultInjector: FaultInjector? = nil
    /// Told of group commits and committed projection changes (metrics); nil: nobody.
    public var ledgerObserver: (any LedgerObserver)? = nil
    /// Tests only: PostgreSQL commits the way ``PostgresTail/plain`` does (one statement per
    /// shared row, the commit in a round trip of its own), for the tests that compare the paths.
    var postgresPlainWrites = false
    /// Tests only: how commits write their rollup change (nil: ``RollupWrites/standard(_:)``), for
    /// the tests that compare the journal with direct writes.
    var rollupWrites: RollupWrites? = nil
    /// Tests only: how long after a journal row its fold runs (``RollupFolder/delay``).
    var rollupFoldDelay: Duration = RollupFolder.delay
    /// Tests only: open without looking at the schema at all (to clean up a too-new one).
    var skipSchemaCheck = false
    /// Tests only: called before each batch of the version-14 rewrite commits (throw: killed there).
    var repackFault: RepackFault? = nil
    /// Rows per batch of the version-14 rewrite. Default 500.
    var repackBatch = 500
    /// Tests only: apply migrations up to this version only (a database as an older binary left it).
    var migrateThrough: Int? = nil
    /// Tests only: closing the store hands its PostgreSQL schema back to
    /// ``PostgresSchemaPool/shared`` (reset for another test, or dropped).
    var recyclesSchema = false
    /// Frames (pages) past which a SQLite file's WAL is started over (``WALRestart``); tests
    /// make it small. Default 4096 (16 MiB of 4 KiB pages).
    var sqliteWALRestartPages: Int64 = 4096
    /// Tests only: a new SQLite database (in memory, or a file not there yet) starts as this
    /// image instead of empty: ``SQLiteStore/migratedImage``, so that opening it migrates nothing.
    var sqliteInitialImage: [UInt8]? = nil

    /// Creates the default configuration.
    public init() {}
}

/// Which committed writes a customer read on a PostgreSQL replica is sure to see
/// (`database.readYourWrites`, docs/scaling.md).
public enum ReadYourWrites: String, Sendable, CaseIterable {
    /// Every write committed for that customer before the read began, by any server: one indexed
    /// lookup on the primary before each customer read, then the replica only when it has it.
    case allServers
    /// This process's own writes only (no lookup): a client that writes through one server and
    /// reads through another can miss its write until the replica replays it.
    case thisServer
}

/// A parsed database URL.
///
/// - `sqlite:./data/entitled.sqlite`, `sqlite:/abs/path.sqlite`, `sqlite://./relative.sqlite`
/// - `sqlite::memory:` (one private in-memory database per store)
/// - `postgres://user:pass@host:port/db?sslmode=disable` or `postgresql://…` (passed to libpq)
public enum DatabaseURL: Sendable, Hashable {
    /// A SQLite database file.
    case sqliteFile(path: String)
    /// A private in-memory SQLite database.
    case sqliteMemory
    /// A PostgreSQL connection URI, as libpq accepts it.
    case postgres(uri: String)

    /// Parses a URL.
    /// - Throws: `INVALID_DATABASE_URL`.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") {
            let rest = trimmed.drop(while: { $0 != "/" }).dropFirst(2)
            guard !rest.isEmpty, !rest.hasPrefix("/") || rest.count > 1 else {
                throw StorageError(.invalidURL, "PostgreSQL URL needs a host or a database")
            }
            self = .postgres(uri: trimmed)
            return
        }
        guard trimmed.hasPrefix("sqlite:") else {
            throw StorageError(.invalidURL, "unsupported database URL scheme (use sqlite: or postgres://)")
        }
        var path = String(trimmed.dropFirst("sqlite:".count))
        if path == ":memory:" {
            self = .sqliteMemory
            return
        }
        if path.hasPrefix("//") { path.removeFirst(2) }
        guard !path.isEmpty, !path.contains("\0") else {
            throw StorageError(.invalidURL, "SQLite URL needs a file path")
        }
        self = .sqliteFile(path: path)
    }

    /// The URL without any password, for logs.
    public var redacted: String {
        switch self {
        case .sqliteFile(let path): return "sqlite:\(path)"
        case .sqliteMemory: return "sqlite::memory:"
        case .postgres(let uri):
            guard let scheme = uri.firstRange(of: "://"), let at = uri[scheme.upperBound...].firstRange(of: "@")
            else { return uri }
            let userInfo = uri[scheme.upperBound..<at.lowerBound]
            guard let colon = userInfo.firstIndex(of: ":") else { return uri }
            return String(uri[..<colon]) + ":***" + String(uri[at.lowerBound...])
        }
    }
}

/// Opens a store for a database URL, migrating it unless the configuration says otherwise.
/// - Parameters:
///   - url: See ``DatabaseURL``.
///   - configuration: Options.
/// - Throws: ``StorageError`` (`INVALID_DATABASE_URL`, `STORAGE_UNAVAILABLE`, `SCHEMA_TOO_NEW`, …).
public func openStore(url: String, configuration: StoreConfiguration = StoreConfiguration()) async throws -> any LedgerStore {
    try await openStore(DatabaseURL(parsing: url), configuration: configuration)
}

/// Opens a store for a parsed database URL.
public func openStore(_ url: DatabaseURL, configuration: StoreConfiguration = StoreConfiguration()) async throws -> any LedgerStore {
    switch url {
    case .sqliteFile(let path):
        return try await SQLiteStore.open(location: .file(path), configuration: configuration)
    case .sqliteMemory:
        return try await SQLiteStore.open(location: .memory, configuration: configuration)
    case .postgres(let uri):
        return try await PostgresStore.open(uri: uri, configuration: configuration)
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}

extension StorageError {
    /// What ``LedgerStore/backup(to:)`` answers on PostgreSQL.
    public static var backupUnsupported: StorageError {
        StorageError(
            .unsupported,
            "PostgreSQL databases are backed up with PostgreSQL's own tools: pg_dump for a logical copy, or pg_basebackup with WAL archiving for point-in-time recovery (docs/deploy.md)")
    }
}

/// The result of a read that must not wait for a thread, a lock or the network.
public enum ImmediateRead<Value: Sendable>: Sendable {
    /// The read was done.
    case done(Value)
    /// The backend cannot answer without waiting: use the asynchronous read.
    case wouldWait
}

extension LedgerStore {
    /// Backends that check their own pages.
    public func checkIntegrity(full: Bool, timeLimit: Duration?) async throws -> IntegrityReport {
        try await ping()
        return IntegrityReport(check: "none", problems: [], complete: true)
    }

    /// Backends that the server cannot copy itself (PostgreSQL).
    public func backup(to path: String) async throws -> BackupReport {
        throw StorageError.backupUnsupported
    }

    /// Backends without immediate reads always defer to the asynchronous one.
    public func stateNow(appUserId: String) throws -> ImmediateRead<StoredState?> { .wouldWait }

    /// Backends without immediate reads have no mark.
    public func changeMarkNow() throws -> ImmediateRead<Int64> { .wouldWait }
}
