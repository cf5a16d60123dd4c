import Foundation
import Synchronization

/// The embedded SQLite ledger.
///
/// - One writer thread owns the only write connection. Writes queue up in a ``JobQueue``; the
///   writer drains the queue and commits everything it took in **one** transaction (group commit);
///   if a job fails, the group runs again without it, each job in its own `SAVEPOINT` (see
///   `commitGroup`), so a failing job is rolled back alone. The writer commits
///   with `synchronous=NORMAL` and hands the group to a ``WALSyncer``, which fsyncs the WAL and
///   only then resumes the group's callers; meanwhile the writer already runs the next group.
/// - Reads are short single statements; they run on the caller's thread with a connection from a
///   small pool (WAL lets them read while the writer writes). An in-memory database has no WAL and
///   no shared file, so there reads go through the writer thread too.
final class SQLiteStore: SessionBackedStore {
    enum Location: Sendable {
        case file(String)
        case memory
    }

    let location: Location
    let configuration: StoreConfiguration
    private let queue = JobQueue()
    private let threads = ThreadTracker()
    let rollupFolder: RollupFolder
    private let readers: Mutex<[SQLiteConnection]> = Mutex([])
    private let closed = Flag()
    /// The connection that keeps the WAL index ``walIndex`` maps (or that ``changeMarkNow()``
    /// reads `PRAGMA data_version` on when it cannot be mapped): opened on first use and
    /// kept until the store closes, never replaced nor reopened (a new connection would count from
    /// the start again, and its marks could repeat an older one's).
    private let watcher: Mutex<Watcher> = Mutex(.unopened)
    /// The database's WAL index, mapped once the watcher opened: marks read from its header
    /// without the watcher's lock or a read transaction (both poll threads read a mark per
    /// request). Never set when the index cannot be mapped; then every mark is `data_version`'s,
    /// so the two kinds never mix.
    private let walIndex = AtomicLazyReference<SQLiteWALIndex>()
    /// Marks being read from ``walIndex``: ``close()`` waits for them before the watcher's
    /// connection closes, after which another process may empty the index under the mapping.
    private let marksInFlight = Atomic<Int>(0)

    private enum Watcher {
        case unopened
        case open(SQLiteConnection)
        case closed
    }
    /// Rung by the writer after each commit; the checkpointer sleeps until then.
    private let committed = Doorbell()
    /// Checkpoints run so far (tests: an idle store runs none).
    let checkpoints = Atomic<Int>(0)
    /// Starts a file's WAL over under sustained writes; nil in memory (no WAL).
    private let walRestart: WALRestart?

    private init(location: Location, configuration: StoreConfiguration) {
        self.location = location
        self.configuration = configuration
        if case .file = location { walRestart = WALRestart(pages: configuration.sqliteWALRestartPages) } else { walRestart = nil }
        rollupFolder = RollupFolder(delay: configuration.rollupFoldDelay)
    }

    static func open(location: Location, configuration: StoreConfiguration) async throws -> SQLiteStore {
        let writer: SQLiteConnection
        switch location {
        case .memory:
            writer = try SQLiteConnection(path: nil)
            if let image = configuration.sqliteInitialImage { try writer.deserialize(image) }
            try writer.configure(writer: true, wal: false, busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds)
        case .file(let path):
            // A plain path gets its folder made; a `file:` URI (SQLite's own syntax, with options
            // such as `mode=ro`) is not a path, and its folder would be made under the working
            // directory as `file:/…`.
            if !path.hasPrefix("file:") {
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
                try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                if let image = configuration.sqliteInitialImage, !FileManager.default.fileExists(atPath: path) {
                    try Data(image).write(to: URL(fileURLWithPath: path))
                }
            }
            writer = try SQLiteConnection(path: path)
            // Asked for read-write, SQLite opens a file it cannot write read-only without a word;
            // every write would then fail while reads (and /readyz) work.
            if writer.isReadOnly {
                let reason = access(path, W_OK) == 0 ? "SQLite opened it read-only" : String(cString: strerror(errno))
                throw StorageError(.unavailable, "the database file \(path) cannot be written: \(reason)", detail: nil, retry: .none)
            }
            try writer.configure(
                writer: true, wal: true, busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds,
                syncedBySyncer: true)
        }
        let store = SQLiteStore(location: location, configuration: configuration)
        var syncer: WALSyncer?
        if case .file(let path) = location {
            let walSyncer = WALSyncer(databasePath: path, log: configuration.log)
            store.threads.start(name: "entitled.sqlite.syncer") { walSyncer.run() }
            syncer = walSyncer
        }
        writer.tail.journal = store.journal(.sqlite)
        store.startFolding()
        store.startWriter(writer, syncer: syncer)
        if case .file(let path) = location { try store.startCheckpointer(path: path) }
        do {
            if configuration.migrateOnOpen {
                _ = try await store.migrate()
            } else if !configuration.skipSchemaCheck {
                _ = try await store.write { try Schema.check($0) }
            }
        } catch {
            await store.close()
            throw error
        }
        store.foldLeftRows(.sqlite)
        return store
    }

    // MARK: Threads

    /// With a `syncer`, committed groups are finished by it after their fsync (file databases);
    /// without, right after `COMMIT` (in memory, where there is nothing to sync).
    private func startWriter(_ connection: SQLiteConnection, syncer: WALSyncer?) {
        let queue = self.queue
        let maxBatch = max(1, configuration.maxGroupCommit)
        let fault = configuration.faultInjector
        let observer = configuration.ledgerObserver
        let log = configuration.log
        let committed = self.committed
        let walRestart = self.walRestart
        // Without a busy timeout each try answers at once: asking again would spin.
        let lockWait = DispatchTimeInterval.milliseconds(
            configuration.sqliteBusyTimeoutMilliseconds > 0 ? max(0, configuration.sqliteWriteLockWaitMilliseconds) : 0)
        let groupReads: Bool
        if case .memory = location { groupReads = true } else { groupReads = false }
        threads.start(name: "entitled.sqlite.writer") {
            var stats = WriterStats()
            var lastGroup = 1
            var idleSince = DispatchTime.now().uptimeNanoseconds
            while var jobs = queue.take(maxWrites: maxBatch, groupReads: groupReads) {
                let woke = DispatchTime.now().uptimeNanoseconds
                stats.idle += woke - idleSince
                defer { idleSince = DispatchTime.now().uptimeNanoseconds }
                var writes = jobs.filter(\.isWrite)
                // Adaptive group commit, without a syncer only (with one, groups committed during
                // a sync share the next fsync anyway, and waiting would idle the writer): when the
                // last group was large, concurrent writers are active and the rest of them are
                // probably a few microseconds from enqueueing (they were resumed by the last
                // commit). Wait briefly (at most 400 µs) for them rather than commit a small group:
                // the queue wakes the writer as each one arrives. A single writer (last group of 1)
                // never waits.
                if syncer == nil && !writes.isEmpty && writes.count < lastGroup {
                    let deadline = DispatchTime.now() + .microseconds(400)
                    while writes.count < lastGroup {
                        let more = queue.takeMoreWrites(min(lastGroup, maxBatch) - writes.count, waitingUntil: deadline)
                        if more.isEmpty { break }
                        writes += more
                        jobs += more
                    }
                    stats.gather += DispatchTime.now().uptimeNanoseconds - woke
                }
                if !writes.isEmpty {
                    lastGroup = writes.count
                    Self.commitGroup(
                        writes, on: connection, fault: fault, syncer: syncer, lockWait: lockWait, stats: &stats)
                    observer?.groupCommitted(writes: writes.count)
                    // Before the ring that wakes the checkpointer, whose pass would hold the
                    // checkpoint lock the restart needs.
                    if walRestart?.afterCommit(on: connection) == true { stats.walRestarts += 1 }
                    committed.ring()
                }
                for job in jobs where !job.isWrite {
                    _ = job.perform(connection)
                    job.finish(overriding: nil)
                }
            }
            syncer?.close()
            if let log { stats.report(to: log) }
        }
    }

    /// Checkpoints the WAL into the database file from a thread of its own, at most every 50 ms
    /// and only after commits (an idle store's thread sleeps until the writer rings or the store
    /// closes), so the writer doesn't pause to copy pages (its automatic checkpoint is only a
    /// backstop). PASSIVE never blocks anyone; the WAL's frame count it reports tells the writer
    /// when to start the WAL over (``WALRestart``).
    private func startCheckpointer(path: String) throws {
        let connection = try SQLiteConnection(path: path)
        try connection.configure(writer: false, wal: true, busyTimeoutMilliseconds: 2000, checkpointer: true)
        let committed = self.committed
        let walRestart = self.walRestart
        // Holds the store until close (which ends the thread) for its `checkpoints` counter.
        threads.start(name: "entitled.sqlite.checkpoint") { [self] in
            var last: DispatchTime?
            while committed.wait() == .rung {
                if let last, committed.pause(until: last + .milliseconds(50)) == .closed { break }
                last = DispatchTime.now()
                // Columns busy, log (frames in the WAL), checkpointed.
                if let frames = (try? connection.row("PRAGMA wal_checkpoint(PASSIVE)", as: WALCheckpoint.self))?.log {
                    walRestart?.note(frames: frames)
                }
                self.checkpoints.add(1, ordering: .relaxed)
            }
        }
    }

    /// Runs `jobs` in one transaction and resumes them once the commit is durable.
    ///
    /// Jobs rarely fail, so the group first runs without savepoints: a savepoint makes SQLite copy
    /// every page a job touches into a statement journal first, which cost the writer more than
    /// the jobs' own inserts. If a job fails, the transaction is rolled back, that job keeps its
    /// error, and the others run again in a new transaction, each in its own savepoint so that
    /// a second failure is rolled back alone.
    private static func commitGroup(
        _ jobs: [any StorageJob], on connection: SQLiteConnection, fault: FaultInjector?, syncer: WALSyncer?,
        lockWait: DispatchTimeInterval, stats: inout WriterStats
    ) {
        stats.groups += 1
        stats.jobs += jobs.count
        var jobs = jobs
        var savepoints = false
        while true {
            let t0 = DispatchTime.now().uptimeNanoseconds
            var t1 = t0
            do {
                try connection.beginImmediate(until: DispatchTime.now() + lockWait)
                connection.tail.begin()
            } catch {
                for job in jobs { job.finish(overriding: error) }
                return
            }
            do {
                var failed: Int?
                for (index, job) in jobs.enumerated() {
                    if savepoints { try connection.query("SAVEPOINT ingest") }
                    let succeeded = job.perform(connection)
                    // SQLite ends the whole transaction by itself after some errors (I/O, full disk):
                    // then nothing of the group can be trusted and every job fails.
                    if !succeeded && connection.isAutocommit { throw job.failure ?? StorageError(.unavailable) }
                    if savepoints {
                        if !succeeded { try connection.query("ROLLBACK TO ingest") }
                        try connection.query("RELEASE ingest")
                    }
                    if succeeded { connection.tail.release() } else { connection.tail.rollBack() }
                    if !savepoints && !succeeded {
                        failed = index
                        break
                    }
                }
                if let failed {
                    try connection.execute("ROLLBACK")
                    stats.retries += 1
                    jobs.remove(at: failed).finish(overriding: nil)
                    if jobs.isEmpty { return }
                    savepoints = true
                    continue
                }
                // The shared rows and the outbox last, as on PostgreSQL (TransactionTail).
                try connection.tail.flush(connection)
                if let fault { try Ledger(session: connection, fault: fault).inject(.beforeCommit) }
                t1 = DispatchTime.now().uptimeNanoseconds
                try connection.query("COMMIT")
                stats.work += t1 - t0
                stats.commit += DispatchTime.now().uptimeNanoseconds - t1
            } catch {
                if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
                for job in jobs { job.finish(overriding: error) }
                return
            }
            break
        }
        let t2 = DispatchTime.now().uptimeNanoseconds
        if let syncer {
            syncer.submit(jobs)
        } else {
            for job in jobs { job.finish(overriding: nil) }
        }
        stats.resume += DispatchTime.now().uptimeNanoseconds - t2
    }

    private func submit<T: Sendable>(isWrite: Bool, _ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job(isWrite: isWrite, body: body, continuation: continuation)
            if !queue.enqueue(job) { job.finish(overriding: StorageError(.closed, "the store is closed")) }
        }
    }

    /// Runs `body` on the writer thread inside the current group transaction (in its own savepoint).
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await submit(isWrite: true, body)
    }

    /// Runs a read with a pooled read connection, on the calling thread (reads are short statements).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        guard !closed.isSet else { throw StorageError(.closed, "the store is closed") }
        guard case .file(let path) = location else { return try await submit(isWrite: false, body) }
        return try readNow(path: path, body)
    }

    func stateNow(appUserId: String) throws -> ImmediateRead<StoredState?> {
        guard !closed.isSet, case .file(let path) = location else { return .wouldWait }
        return .done(try readNow(path: path) { try Ledger(session: $0, fault: nil).state(appUserId: appUserId) })
    }

    func changeMarkNow() throws -> ImmediateRead<Int64> {
        marksInFlight.add(1, ordering: .sequentiallyConsistent)
        defer { marksInFlight.subtract(1, ordering: .sequentiallyConsistent) }
        guard !closed.isSet, case .file(let path) = location else { return .wouldWait }
        // A header caught mid-rewrite vouches for nothing.
        func read(_ index: SQLiteWALIndex) -> ImmediateRead<Int64> { index.mark().map { .done($0) } ?? .wouldWait }
        if let index = walIndex.load() { return read(index) }
        return try watcher.withLock { watcher throws -> ImmediateRead<Int64> in
            switch watcher {
            case .open(let connection):
                if let index = walIndex.load() { return read(index) }
                // Its version changes on every commit but its own, and it never commits.
                return .done(try connection.dataVersion())
            case .unopened:
                let connection = try SQLiteConnection(path: path)
                try connection.configure(writer: false, wal: true, busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds)
                // A read maps the index into the connection (and sizes it, if no one had).
                let version = try connection.dataVersion()
                watcher = .open(connection)
                if let index = connection.walIndex(), index.mark() != nil { return read(walIndex.storeIfNil(index)) }
                return .done(version)
            case .closed:
                return .wouldWait
            }
        }
    }

    func attributesNow(appUserId: String) throws -> ImmediateRead<[CustomerAttribute]?> {
        guard !closed.isSet, case .file(let path) = location else { return .wouldWait }
        return .done(
            try readNow(path: path) { session in
                guard let customer = try Ledger(session: session, fault: nil).customer(appUserId: appUserId) else { return nil }
                return try Ledger.readAttributes(session, customerId: customer.id)
            })
    }

    /// `body` on the calling thread with a pooled read connection of the file database at `path`.
    private func readNow<T>(path: String, _ body: (any SQLSession) throws -> T) throws -> T {
        let connection: SQLiteConnection
        if let pooled = readers.withLock({ $0.popLast() }) {
            connection = pooled
        } else {
            connection = try SQLiteConnection(path: path)
            try connection.configure(writer: false, wal: true, busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds)
        }
        defer {
            let limit = max(1, configuration.sqliteReadConnections)
            readers.withLock { pool in
                if pool.count < limit { pool.append(connection) }
            }
        }
        return try body(connection)
    }

    func checkIntegrity(full: Bool, timeLimit: Duration?) async throws -> IntegrityReport {
        let deadline = timeLimit.map { limit -> UInt64 in
            let (seconds, attoseconds) = limit.components
            return DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
        }
        let check = full ? "integrity_check" : "quick_check"
        let run: @Sendable (any SQLSession) throws -> IntegrityReport = { session in
            guard let connection = session as? SQLiteConnection else { throw StorageError(.internal, "not a SQLite session") }
            let (problems, complete) = try connection.integrityCheck(full: full, deadline: deadline)
            return IntegrityReport(check: check, problems: problems, complete: complete)
        }
        guard case .file(let path) = location else { return try await submit(isWrite: false, run) }
        // A connection of its own: the check may take a while, and it must not hold a pooled one.
        let connection = try SQLiteConnection(path: path, readOnly: true)
        try connection.configure(writer: false, wal: true, busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds)
        return try run(connection)
    }

    private func ledger(_ session: any SQLSession) -> Ledger {
        Ledger(session: session, fault: configuration.faultInjector)
    }

    // MARK: LedgerStore

    var faultInjector: FaultInjector? { configuration.faultInjector }
    var ledgerObserver: (any LedgerObserver)? { configuration.ledgerObserver }
    /// Customers per rebuild transaction.
    var rebuildChunk: Int { 500 }

    func migrate() async throws -> MigrationReport {
        let (stamp, through) = (ISO8601DateFormatter().string(from: Date()), configuration.migrateThrough)
        let (report, pending) = try await write { session in
            let report = try Schema.migrate(session, appliedAt: stamp, through: through)
            return (report, try Schema.pendingRepack(session, version: report.currentVersion))
        }
        try await repackLegacyRows(pending: pending)
        return report
    }

    func close() async {
        await rollupFolder.close()
        closed.set()
        committed.close()
        queue.close()
        await threads.waitForAll()
        readers.withLock { $0.removeAll() }
        // No mark reads the index once its connection is gone (``marksInFlight``).
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        while marksInFlight.load(ordering: .sequentiallyConsistent) > 0 { await Task.yield() }
        watcher.withLock { $0 = .closed }
    }

    /// Bench support: see ``_StorageBenchmark``.
    func bulkLoad(customers range: Range<Int>, now: Int64, projection: _StorageBenchmark.SyntheticProjection? = nil) async throws {
        try await write { try Ledger(session: $0, fault: nil).bulkLoadSynthetic(range, now: now, projection: projection) }
    }

    /// Test support: the image of an in-memory database every migration ran on, made once per
    /// process. Tests start their fresh databases from it (``StoreConfiguration/sqliteInitialImage``)
    /// rather than run every migration for each: that was a share of the suites' time. The tests
    /// of migrations themselves start from empty databases or fixtures.
    static let migratedImage = Task<[UInt8], any Error> {
        let store = try await open(location: .memory, configuration: StoreConfiguration())
        do {
            // In memory, a read runs on the writer's connection, outside any transaction.
            let image = try await store.read { session in
                guard let connection = session as? SQLiteConnection else {
                    throw StorageError(.internal, "the SQLite writer has no SQLite connection")
                }
                return try connection.serialize()
            }
            await store.close()
            return image
        } catch {
            await store.close()
            throw error
        }
    }

    /// Test support: the default options, a new SQLite database starting as ``migratedImage``.
    static func migratedTemplateConfiguration() async throws -> StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.sqliteInitialImage = try await migratedImage.value
        return configuration
    }

    /// Test support: jobs waiting for the writer.
    var queuedJobs: Int { queue.count }

    /// Test support: runs raw SQL on the writer.
    func _execute(_ sql: String) async throws {
        try await write { try $0.execute(sql) }
    }

    /// Test support: the first column of the first row of a query, as an integer.
    func _scalar(_ query: SQLQuery) async throws -> Int64 {
        try await read { try $0.value(query, as: Int64?.self).flatMap { $0 } ?? 0 }
    }
}

extension SQLiteStore {
    /// The database's logical size (pages in use, including those still in the WAL).
    func databaseBytes() async throws -> Int64 {
        try await read { session in
            try session.value(
                "SELECT (c.page_count - f.freelist_count) * s.page_size FROM pragma_page_count() AS c, pragma_freelist_count() AS f, pragma_page_size() AS s", as: Int64.self) ?? 0
        }
    }
}

/// A one-way boolean shared between threads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// `PRAGMA wal_checkpoint`'s answer: `log`, the frames in the WAL (-1 when not in WAL mode).
private struct WALCheckpoint: Decodable {
    var log: Int64?
}
