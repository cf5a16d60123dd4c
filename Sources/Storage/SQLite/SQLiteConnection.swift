internal import CSQLite
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One SQLite connection and its prepared-statement cache.
///
/// Every SQLite call of the module goes through this file, and every result code through
/// ``SQLiteConnection/check(_:_:)``, which turns it into a ``StorageError``.
///
/// The connection is opened in multi-thread mode (`SQLITE_OPEN_NOMUTEX`): it must be used by one
/// thread at a time. The writer keeps its connection on its own thread; read connections are
/// handed from thread to thread through the reader pool's lock, never shared. That ownership
/// discipline is what the `@unchecked Sendable` stands for.
final class SQLiteConnection: SQLSession, @unchecked Sendable {
    let dialect: SQLDialect = .sqlite
    let tail = TransactionTail()
    private let db: OpaquePointer
    /// The busy timeout ``configure(writer:wal:busyTimeoutMilliseconds:checkpointer:syncedBySyncer:)`` set (ms).
    private var busyTimeout: Int32 = 0
    private var statements: [String: OpaquePointer] = [:]
    /// The fixed queries' statements (also in ``statements``), found by the text's identity; the
    /// text is kept so that its identity is never another's.
    private var fixedStatements: [ObjectIdentifier: (text: SQLFixedText, statement: OpaquePointer)] = [:]
    /// Each prepared statement's result columns, named once.
    private var columns: [OpaquePointer: SQLColumns] = [:]

    /// Runs once, before the process's first connection initializes SQLite.
    private static let configured: Bool = {
        _ = CSQLite_disableMemoryStatistics()
        return true
    }()

    /// Opens (creating when `create`) a database file, or a private in-memory database for `nil`.
    init(path: String?, readOnly: Bool = false) throws {
        _ = Self.configured
        var handle: OpaquePointer? = nil
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path ?? ":memory:", &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw StorageError(.unavailable, "cannot open the SQLite database", detail: message, retry: .none)
        }
        db = handle
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// Turns a result code into an error (or nothing for OK/ROW/DONE).
    func check(_ rc: Int32, _ what: @autoclosure () -> String) throws {
        switch rc & 0xff {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return
        default:
            throw error(rc, what())
        }
    }

    func error(_ rc: Int32, _ what: String) -> StorageError {
        let detail = "\(what): \(String(cString: sqlite3_errmsg(db))) (code \(rc))"
        switch rc & 0xff {
        case SQLITE_CONSTRAINT:
            return StorageError(.constraint, "a database constraint rejected the write", detail: detail, retry: .none)
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_NOMEM, SQLITE_READONLY,
            SQLITE_PROTOCOL:
            return StorageError(.unavailable, "the database is unavailable", detail: detail, retry: .none)
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StorageError(.corrupt, "the database file is damaged", detail: detail, retry: .none)
        default:
            return StorageError(.internal, "database error", detail: detail, retry: .none)
        }
    }

    /// True when SQLite opened the database read-only: it does so silently when the file cannot be
    /// written, even when asked for read-write.
    var isReadOnly: Bool { sqlite3_db_readonly(db, "main") == 1 }

    /// Runs `PRAGMA quick_check` (or, `full`, `integrity_check`), interrupted once `deadline`
    /// (`DispatchTime` nanoseconds) passes. Returns SQLite's findings (at most 100; none when the
    /// file is sound) and whether the check finished.
    func integrityCheck(full: Bool, deadline: UInt64?) throws -> (problems: [String], complete: Bool) {
        let limit = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        limit.initialize(to: deadline ?? .max)
        defer { limit.deallocate() }
        sqlite3_progress_handler(db, 10_000, { context in
            guard let context else { return 0 }
            return DispatchTime.now().uptimeNanoseconds > context.load(as: UInt64.self) ? 1 : 0
        }, limit)
        defer { sqlite3_progress_handler(db, 0, nil, nil) }
        do {
            let rows = try query(full ? "PRAGMA integrity_check(100)" : "PRAGMA quick_check(100)", [])
            let findings = try rows.map { try $0.single(String?.self) ?? "" }
            return (findings == ["ok"] ? [] : findings, true)
        } catch let error as StorageError {
            switch sqlite3_errcode(db) & 0xff {
            case SQLITE_INTERRUPT: return ([], false)
            case SQLITE_CORRUPT, SQLITE_NOTADB: return ([error.detail ?? error.message], true)
            default: throw error
            }
        }
    }

    /// `PRAGMA data_version`: a number that changes whenever another connection, of this process
    /// or another, commits to the database (never for this connection's own commits).
    func dataVersion() throws -> Int64 {
        let statement = try prepared("PRAGMA data_version")
        defer { sqlite3_reset(statement) }
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else {
            try check(rc, "data_version")
            throw error(rc, "data_version: no row")
        }
        return sqlite3_column_int64(statement, 0)
    }

    /// The database's WAL index (its `-shm` file) mapped read-only; nil for a database in memory,
    /// one not in WAL mode (an index left beside it would never change), or when the index cannot
    /// be mapped. Valid while a connection of this process keeps the database open: SQLite empties
    /// the index only when it opens it with no connection left, and leaves WAL mode only then.
    func walIndex() -> SQLiteWALIndex? {
        guard let name = sqlite3_db_filename(db, "main"), name.pointee != 0,
            let mode = try? query("PRAGMA journal_mode", []).first?.single(String.self), mode.lowercased() == "wal"
        else { return nil }
        return SQLiteWALIndex(path: String(cString: name) + "-shm")
    }

    /// The main database's bytes, as its file would hold them.
    func serialize() throws -> [UInt8] {
        var size: sqlite3_int64 = 0
        guard let bytes = sqlite3_serialize(db, "main", &size, 0) else {
            throw StorageError(.internal, "cannot serialize the SQLite database")
        }
        defer { sqlite3_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }

    /// Replaces the main database (of an in-memory connection) with a copy of `image`
    /// (``serialize()``'s bytes), which it may then grow without limit as an empty one would.
    func deserialize(_ image: [UInt8]) throws {
        guard let copy = sqlite3_malloc64(sqlite3_uint64(image.count))?.assumingMemoryBound(to: UInt8.self) else {
            throw StorageError(.unavailable, "out of memory for an SQLite image of \(image.count) bytes")
        }
        image.withUnsafeBufferPointer { copy.update(from: $0.baseAddress!, count: image.count) }
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
        let size = sqlite3_int64(image.count)
        try check(sqlite3_deserialize(db, "main", copy, size, size, flags), "deserialize")
        var limit = sqlite3_int64.max
        _ = sqlite3_file_control(db, "main", SQLITE_FCNTL_SIZE_LIMIT, &limit)
    }

    /// True when no transaction is open (SQLite rolled one back by itself after some errors).
    var isAutocommit: Bool { sqlite3_get_autocommit(db) != 0 }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>? = nil
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if let message {
            let text = String(cString: message)
            sqlite3_free(message)
            if rc != SQLITE_OK { throw error(rc, "exec: \(text)") }
        }
        try check(rc, "exec")
    }

    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] {
        try run(try prepared(sql), parameters)
    }

    func query(_ fixed: SQLFixedText, _ parameters: [SQLValue]) throws -> [SQLRow] {
        let key = ObjectIdentifier(fixed)
        if let known = fixedStatements[key] { return try run(known.statement, parameters) }
        let statement = try prepared(fixed.sqlite)
        fixedStatements[key] = (fixed, statement)
        return try run(statement, parameters)
    }

    /// Binds `parameters` to the prepared `statement`, runs it and returns its rows.
    private func run(_ statement: OpaquePointer, _ parameters: [SQLValue]) throws -> [SQLRow] {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(statement, index)
            case .int(let number):
                rc = sqlite3_bind_int64(statement, index, number)
            case .text(let text):
                rc = text.utf8CString.withUnsafeBufferPointer { buffer in
                    sqlite3_bind_text(statement, index, buffer.baseAddress, Int32(buffer.count - 1), CSQLite_transient())
                }
            case .blob(let bytes):
                rc = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(statement, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), CSQLite_transient())
                }
            }
            try check(rc, "bind")
        }
        var rows: [SQLRow] = []
        let names = columnNames(statement)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc, "step \(Self.statementText(statement))") }
            let count = sqlite3_column_count(statement)
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER:
                    values.append(.int(sqlite3_column_int64(statement, column)))
                case SQLITE_NULL:
                    values.append(.null)
                case SQLITE_BLOB:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if length == 0 {
                        values.append(.blob([]))
                    } else {
                        let pointer = sqlite3_column_blob(statement, column)!
                        values.append(.blob(Array(UnsafeRawBufferPointer(start: pointer, count: length))))
                    }
                case SQLITE_FLOAT:
                    values.append(.int(Int64(sqlite3_column_double(statement, column))))
                default:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if let pointer = sqlite3_column_text(statement, column) {
                        values.append(.text(String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)))
                    } else {
                        values.append(.text(""))
                    }
                }
            }
            rows.append(SQLRow(values: values, columns: names))
        }
        return rows
    }

    /// The start of a statement's SQL, for error details: which statement failed. Values are
    /// bound, never part of the text, so the text carries no data.
    private static func statementText(_ statement: OpaquePointer) -> String {
        guard let text = sqlite3_sql(statement) else { return "" }
        return String(String(cString: text).prefix(120))
    }

    /// `BEGIN IMMEDIATE`, tried again while another connection (another process) holds the
    /// write lock past the busy timeout, until `deadline`. SQLite's busy handler polls and is not
    /// fair: a process that commits group after group retakes the lock between its own commits,
    /// and a second process's writer could miss every gap for the whole busy timeout although
    /// the lock was free a moment at a time. Its callers are still waiting, so failing them
    /// would turn a busy moment into an error; the deadline still bounds a lock held for good.
    func beginImmediate(until deadline: DispatchTime) throws {
        // Every group commit begins here: the statement is prepared once, as every other.
        let statement = try prepared("BEGIN IMMEDIATE")
        while true {
            let rc = sqlite3_step(statement)
            let failure = rc == SQLITE_DONE ? nil : error(rc, "BEGIN IMMEDIATE")
            sqlite3_reset(statement)
            guard let failure else { return }
            // Each try waited out the busy timeout in SQLite's busy handler before answering BUSY.
            guard rc & 0xff == SQLITE_BUSY, DispatchTime.now() < deadline else { throw failure }
        }
    }

    private func columnNames(_ statement: OpaquePointer) -> SQLColumns {
        // A schema change recompiles a statement: a `SELECT *` may then have other columns.
        if let known = columns[statement], known.names.count == sqlite3_column_count(statement) { return known }
        let names = (0..<sqlite3_column_count(statement)).map { sqlite3_column_name(statement, $0).map { String(cString: $0) } ?? "" }
        let named = SQLColumns(names)
        columns[statement] = named
        return named
    }

    func pipeline(_ statements: [SQLStatement]) throws -> [[SQLRow]] {
        try statements.map { try query($0.sql, $0.parameters) }
    }

    /// The cached prepared statement for `sql` (PostgreSQL `$n` placeholders become `?n`).
    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer? = nil
        let rc = sqlite3_prepare_v3(db, Self.sqliteParameters(sql), -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        try check(rc, "prepare")
        guard let statement else { throw StorageError(.internal, "empty statement", detail: sql) }
        statements[sql] = statement
        return statement
    }

    static func sqliteParameters(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        for index in bytes.indices.dropLast() where bytes[index] == UInt8(ascii: "$") {
            if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]) { bytes[index] = UInt8(ascii: "?") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Runs a `RESTART` checkpoint, waiting at most `waitMilliseconds` for a lock: copies the WAL
    /// frames the database file lacks and lets the next write start the WAL from its beginning.
    /// False when it could not finish in that time (another connection's checkpoint runs, or a
    /// reader still reads frames of the WAL): nothing to undo, a later try picks up from there.
    func restartWAL(waitMilliseconds: Int32) -> Bool {
        sqlite3_busy_timeout(db, waitMilliseconds)
        defer { sqlite3_busy_timeout(db, busyTimeout) }
        var frames: Int32 = 0
        var copied: Int32 = 0
        return sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_RESTART, &frames, &copied) == SQLITE_OK
    }

    /// Sets the connection's pragmas. The writer's `synchronous` mode: see docs/storage.md.
    /// `syncedBySyncer`: the store fsyncs the WAL itself after each commit (``WALSyncer``), so the
    /// writer commits with `NORMAL` and goes on with the next group while that fsync runs.
    func configure(
        writer: Bool, wal: Bool, busyTimeoutMilliseconds: Int, checkpointer: Bool = false, syncedBySyncer: Bool = false
    ) throws {
        sqlite3_busy_timeout(db, Int32(clamping: busyTimeoutMilliseconds))
        busyTimeout = Int32(clamping: busyTimeoutMilliseconds)
        if writer {
            if wal {
                let mode = try query("PRAGMA journal_mode = WAL", []).first.flatMap { try $0.single(String?.self) }
                guard mode?.lowercased() == "wal" else {
                    throw StorageError(.unavailable, "the database cannot use WAL", detail: "journal_mode=\(mode ?? "?")")
                }
            }
            // A 200 to Apple means "committed": with WAL, NORMAL skips the fsync at commit and
            // can lose the last transactions on power loss. Either SQLite fsyncs the WAL at every
            // commit (FULL), or the store's syncer does it before any caller of the group is
            // answered (NORMAL here, equally durable for what was acknowledged).
            try execute(syncedBySyncer ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL")
            try execute("PRAGMA cache_size = -65536")
            // A backstop: the checkpointer thread normally keeps the WAL far smaller than this.
            try execute("PRAGMA wal_autocheckpoint = 8192")
        } else if checkpointer {
            // Checkpoints write the database file: fsync it fully too.
            try execute("PRAGMA synchronous = FULL")
        } else {
            try execute("PRAGMA query_only = 1")
            try execute("PRAGMA cache_size = -32768")
            try execute("PRAGMA mmap_size = 1073741824")
        }
        try execute("PRAGMA foreign_keys = ON")
    }
}

/// A WAL database's index header read in place (sqlite.org/walformat.html), without a lock or a
/// read transaction: SQLite's writer rewrites the header at every commit (its transaction counter,
/// frame count, salts and checksum), and readers take their snapshot from it, so while the header
/// reads the same, no commit became visible to anyone.
final class SQLiteWALIndex: Sendable {
    /// The mapping's address (`nonisolated(unsafe)`: only read through ``CSQLite_walIndexHeader``,
    /// as SQLite's own readers read it while writers write it).
    nonisolated(unsafe) private let base: UnsafeMutableRawPointer
    /// One page: the header's two copies and the checkpoint information fill 136 bytes of it.
    private static let length = 4096

    /// Maps the index at `path`; nil when it is missing or shorter than a page (SQLite sizes it in
    /// 32 KiB regions once a connection reads).
    init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size >= Self.length,
            let mapped = mmap(nil, Self.length, PROT_READ, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED
        else { return nil }
        base = mapped
    }

    deinit { munmap(base, Self.length) }

    /// The header's transaction counter above its checksum (which covers every field before it):
    /// a new value after every commit. Nil while a writer is rewriting the header (after a few
    /// tries) or before SQLite initialized it.
    func mark() -> Int64? {
        withUnsafeTemporaryAllocation(byteCount: 48, alignment: 8) { header in
            let bytes = header.bindMemory(to: UInt8.self).baseAddress!
            for _ in 0..<16 where CSQLite_walIndexHeader(base, bytes) == 1 {
                // Native byte order, as SQLite writes the index.
                let change = UnsafeRawPointer(bytes).load(fromByteOffset: 8, as: UInt32.self)
                let checksum = UnsafeRawPointer(bytes).load(fromByteOffset: 44, as: UInt32.self)
                return Int64(bitPattern: UInt64(change) << 32 | UInt64(checksum))
            }
            return nil
        }
    }
}
