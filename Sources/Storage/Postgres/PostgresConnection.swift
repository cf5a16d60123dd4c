internal import CPostgres
import Foundation

/// One libpq connection and its prepared statements.
///
/// Every libpq call of the module goes through this file; results are turned into
/// ``StorageError``s by ``PostgresConnection/error(from:_:)``, which also says whether a retry is
/// safe (`reconnect` after a broken connection, `transaction` after a serialization failure
/// 40001 or a deadlock 40P01).
///
/// libpq blocks, and a `PGconn` must not be used by two threads at once: each connection belongs
/// to one pool worker thread for its whole life (hence `@unchecked Sendable`).
final class PostgresConnection: SQLSession, @unchecked Sendable {
    let dialect: SQLDialect = .postgres
    let tail = TransactionTail()
    private var connection: OpaquePointer?
    /// Each statement text's prepared statement on this connection.
    private var prepared: [String: Prepared] = [:]
    /// Each prepared statement's result columns, by statement name: named once, not for every
    /// result (PostgreSQL refuses to run a prepared statement whose result columns changed).
    private var columns: [String: SQLColumns] = [:]
    private var nextStatement = 0
    private let conninfo: String
    /// Where this connection counts its round trips (its store's, shared by its connections).
    private let traffic: PostgresTraffic.Counter
    private let schema: String?
    /// Statements to send in front of the next one that needs an answer, in the same round trip:
    /// transaction control (``defer(_:)``) and held writes (``holdsWrites``), in order.
    private var pending: [Pending] = []
    /// Whether a write that returns no rows (an `INSERT`, `UPDATE` or `DELETE` without
    /// `RETURNING`) is held back and sent with the next statement that needs an answer, instead
    /// of costing a round trip of its own; its error, if any, is thrown by that statement. Only
    /// the store's commit loop turns this on, for its write transactions: it sends what is held
    /// at the end of each job (``flushHeldWrites(then:)``), so that a held write's error is its own
    /// job's, and drops it when the job failed (``discardHeldWrites()``).
    var holdsWrites = false

    /// The server-side `statement_timeout` (ms).
    private let statementTimeout: Int
    /// How long to wait for any answer before giving the connection up (ns): the statement
    /// timeout plus a margin, so a slow statement is cancelled by the server first (the session
    /// stays usable) and only a server that answers nothing at all (frozen, unreachable) is
    /// given up on here.
    private var answerTimeout: UInt64
    /// libpq's `connect_timeout` (s).
    private let connectTimeout: Int

    init(
        conninfo: String, schema: String?, traffic: PostgresTraffic.Counter = PostgresTraffic.Counter(),
        statementTimeoutMilliseconds: Int = 5000, connectTimeoutSeconds: Int = 5
    ) throws {
        self.conninfo = conninfo
        self.traffic = traffic
        self.schema = schema
        self.statementTimeout = max(1, statementTimeoutMilliseconds)
        self.answerTimeout = UInt64(statementTimeout + min(1000, statementTimeout)) * 1_000_000
        // libpq treats 1 as 2 (its minimum).
        self.connectTimeout = max(2, connectTimeoutSeconds)
        try connect()
    }

    deinit {
        if let connection { PQfinish(connection) }
    }

    /// Queues transaction-control statements (`BEGIN`, `SAVEPOINT …`) to go out with the next
    /// query in one pipeline instead of costing a round trip of their own. An error in them is
    /// reported by that query. ``execute(_:)`` sends them first too.
    func `defer`(_ statements: String...) {
        self.defer(statements)
    }

    /// Sends the held writes (and what is deferred) now, with `control` after them, in one round
    /// trip; without held writes, `control` is only deferred.
    func flushHeldWrites(then control: [String]) throws {
        let holding = pending.contains(where: \.isWrite)
        self.defer(control)
        if holding { _ = try send([]) }
    }

    /// Drops the held writes (their job failed and is rolled back); deferred transaction control
    /// stays.
    func discardHeldWrites() {
        pending.removeAll(where: \.isWrite)
    }

    /// The same, for a list of statements.
    func `defer`(_ statements: [String]) {
        pending += statements.map { Pending(statement: SQLStatement($0), isWrite: false) }
    }

    /// (Re)connects: a fresh session, so prepared statements are forgotten.
    func connect() throws {
        if let connection { PQfinish(connection) }
        connection = nil
        pending.removeAll()
        prepared.removeAll()
        columns.removeAll()
        // connect_timeout first: a value in the URL itself comes later and wins.
        let started = DispatchTime.now().uptimeNanoseconds
        let handle = Self.connect(conninfo, timeout: connectTimeout)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let detail = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            // A refusal (a restarting server) is worth retrying at once; a server that took the
            // whole timeout without answering is not. (libpq counts the timeout in whole seconds
            // of the wall clock, so it may end up to a second early.)
            let timedOut = DispatchTime.now().uptimeNanoseconds - started >= UInt64(connectTimeout - 1) * 900_000_000
            throw StorageError(.unavailable, "cannot connect to PostgreSQL", detail: detail, retry: timedOut ? .none : .reconnect)
        }
        connection = handle
        // libpq prints notices and some server messages on stderr by default; a library must not.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Every statement of the ledger is an index lookup or a short index range, joined by key.
        // On a fresh database (before autovacuum has analyzed the tables) the planner guesses
        // row counts and picks hash joins over sequential scans of `facts`; and generic plans
        // cached while a table was nearly empty (foreign-key checks, link lookups) keep their
        // sequential scans as it grows. Index scans in nested loops are right at any size, so
        // only they are allowed.
        try execute(
            "SET client_min_messages = warning; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off; "
                + "SET statement_timeout = \(statementTimeout)")
        if let schema { try execute("SET search_path TO \"\(schema)\"") }
    }

    private static func connect(_ conninfo: String, timeout: Int) -> OpaquePointer? {
        let keywords: [UnsafeMutablePointer<CChar>?] = [strdup("connect_timeout"), strdup("dbname")]
        let values: [UnsafeMutablePointer<CChar>?] = [strdup(String(timeout)), strdup(conninfo)]
        defer { for pointer in keywords + values { free(pointer) } }
        let constKeywords: [UnsafePointer<CChar>?] = keywords.map { $0.map { UnsafePointer($0) } } + [nil]
        let constValues: [UnsafePointer<CChar>?] = values.map { $0.map { UnsafePointer($0) } } + [nil]
        return PQconnectdbParams(constKeywords, constValues, 1)
    }

    /// Waits until libpq can hand over the next result without blocking, until `deadline` at
    /// most. Past it the server is taken for gone: the connection is dropped (the next job
    /// reconnects) and the caller gets `STORAGE_UNAVAILABLE`.
    private func awaitResult(_ connection: OpaquePointer, deadline: UInt64) throws {
        while PQisBusy(connection) == 1 {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw abandon() }
            var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            let rc = poll(&descriptor, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
            if rc < 0 && errno != EINTR { throw error(from: nil, "poll") }
            if rc > 0 && PQconsumeInput(connection) != 1 { throw error(from: nil, "read") }
        }
    }

    /// The next result of what was sent, waiting at most until `deadline`.
    private func nextResult(_ connection: OpaquePointer, deadline: UInt64) throws -> OpaquePointer? {
        try awaitResult(connection, deadline: deadline)
        return PQgetResult(connection)
    }

    /// All results of what was just sent: the first failed one, else the last (the caller clears it).
    private func collect(_ connection: OpaquePointer, sent: Int32, _ what: String) throws -> OpaquePointer? {
        guard sent == 1 else { throw error(from: nil, what) }
        let deadline = DispatchTime.now().uptimeNanoseconds + answerTimeout
        var kept: OpaquePointer? = nil
        while let result = try nextResult(connection, deadline: deadline) {
            let failed = kept.map { ![PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY].contains(PQresultStatus($0)) } ?? false
            if failed {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
        return kept
    }

    /// Runs `body` (inside a transaction) without the statement timeout, waiting up to 10 minutes
    /// for each answer: for migrations, which may wait for another replica's migration to commit.
    func withoutStatementTimeout<T>(_ body: () throws -> T) throws -> T {
        let saved = answerTimeout
        answerTimeout = 600 * 1_000_000_000
        defer { answerTimeout = saved }
        self.defer("SET LOCAL statement_timeout = 0")
        return try body()
    }

    /// Gives up a connection whose server did not answer in time.
    private func abandon() -> StorageError {
        if let connection { PQfinish(connection) }
        connection = nil
        pending.removeAll()
        prepared.removeAll()
        columns.removeAll()
        return StorageError(
            .unavailable, "the database did not answer in time",
            detail: "no answer within \(answerTimeout / 1_000_000) ms", retry: .none)
    }

    /// False once libpq noticed the connection is gone (server restart, network).
    var isHealthy: Bool {
        guard let connection else { return false }
        return PQstatus(connection) == CONNECTION_OK
    }

    func execute(_ sql: String) throws {
        // Held writes have parameters, which a simple query cannot carry: they go first.
        if pending.contains(where: \.isWrite) { _ = try send([]) }
        guard let connection else { throw Self.disconnected }
        var text = sql
        traffic.roundTrip(statements: pending.count + 1)
        if !pending.isEmpty {
            text = pending.map(\.statement.sql).joined(separator: "; ") + "; " + sql
            pending.removeAll()
        }
        let result = try collect(connection, sent: PQsendQuery(connection, text), "exec")
        defer { PQclear(result) }
        try check(result, "exec")
    }

    /// Converts parameters to libpq's arrays for the duration of `body`. Bytes go in binary
    /// format (no escaping, no hex doubling); everything else as text.
    private func withParameters<R>(
        _ parameters: [SQLValue],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        values.reserveCapacity(parameters.count)
        defer { for value in values { free(value) } }
        for parameter in parameters {
            switch parameter {
            case .null:
                values.append(nil); lengths.append(0); formats.append(0)
            case .int(let number):
                values.append(strdup(String(number))); lengths.append(0); formats.append(0)
            case .text(let text):
                values.append(strdup(text)); lengths.append(0); formats.append(0)
            case .blob(let bytes):
                let buffer = malloc(max(1, bytes.count))!.assumingMemoryBound(to: CChar.self)
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { memcpy(buffer, base, bytes.count) }
                }
                values.append(buffer); lengths.append(Int32(bytes.count)); formats.append(1)
            }
        }
        let constValues = values.map { $0.map { UnsafePointer($0) } }
        return constValues.withUnsafeBufferPointer { valuePointers in
            lengths.withUnsafeBufferPointer { lengthPointers in
                formats.withUnsafeBufferPointer { formatPointers in
                    body(valuePointers.baseAddress, lengthPointers.baseAddress, formatPointers.baseAddress)
                }
            }
        }
    }

    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] {
        let statement = SQLStatement(sql, parameters: parameters)
        if holdsWrites, try prepare(sql).returnsNothing {
            pending.append(Pending(statement: statement, isWrite: true))
            return []
        }
        return try send([statement])[0]
    }

    /// The rows of `result`, a result of the prepared statement `statement`.
    private func rows(of result: OpaquePointer?, statement: String) -> [SQLRow] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        let names: SQLColumns
        if let known = columns[statement], known.names.count == columnCount {
            names = known
        } else {
            names = SQLColumns((0..<columnCount).map { PQfname(result, $0).map { String(cString: $0) } ?? "" })
            columns[statement] = names
        }
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) != 0 {
                    values.append(.null)
                } else {
                    values.append(.text(String(cString: PQgetvalue(result, row, column))))
                }
            }
            rows.append(SQLRow(values: values, columns: names))
        }
        return rows
    }

    /// Runs the statements in order in one round trip (libpq pipeline mode). The server runs them
    /// one after another; after a failure the rest are skipped and the first error is thrown.
    /// Writes that return nothing are held back (``holdsWrites``).
    func pipeline(_ requested: [SQLStatement]) throws -> [[SQLRow]] {
        if holdsWrites, try requested.allSatisfy({ try prepare($0.sql).returnsNothing }) {
            pending += requested.map { Pending(statement: $0, isWrite: true) }
            return requested.map { _ in [] }
        }
        return try send(requested)
    }

    /// Sends what is pending and then `requested`, in one round trip; returns `requested`'s rows.
    private func send(_ requested: [SQLStatement]) throws -> [[SQLRow]] {
        guard let connection else { throw Self.disconnected }
        let prefix = pending.map(\.statement)
        let statements = prefix + requested
        guard !statements.isEmpty else { return [] }
        let names = try statements.map { try prepare($0.sql).name }  // PQprepare is not allowed in the pipeline
        pending.removeAll()
        if statements.count == 1 {
            traffic.roundTrip(statements: 1)
            let sent = withParameters(statements[0].parameters) { values, lengths, formats in
                PQsendQueryPrepared(connection, names[0], Int32(statements[0].parameters.count), values, lengths, formats, 0)
            }
            let result = try collect(connection, sent: sent, "execute")
            defer { PQclear(result) }
            try check(result, "execute")
            return Array([rows(of: result, statement: names[0])].dropFirst(prefix.count))
        }
        guard PQenterPipelineMode(connection) == 1 else { throw error(from: nil, "pipeline") }
        var sent = 0
        for (index, statement) in statements.enumerated() {
            let ok = withParameters(statement.parameters) { values, lengths, formats in
                PQsendQueryPrepared(connection, names[index], Int32(statement.parameters.count), values, lengths, formats, 0)
            }
            guard ok == 1 else { break }
            sent += 1
        }
        traffic.roundTrip(statements: sent)
        guard PQpipelineSync(connection) == 1 else {
            let failure = error(from: nil, "pipeline sync")
            try? connect()
            throw failure
        }
        var results: [[SQLRow]] = []
        var failure: StorageError? = nil
        // Each statement gets the whole answer timeout, as the server's statement_timeout counts
        // per statement: a pipeline of several long writes (held ones) is not a slow answer.
        var deadline = DispatchTime.now().uptimeNanoseconds + answerTimeout
        for index in 0..<sent {
            if index > 0 { deadline = DispatchTime.now().uptimeNanoseconds + answerTimeout }
            guard let result = try nextResult(connection, deadline: deadline) else {
                failure = failure ?? error(from: nil, "pipeline result")
                break
            }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                results.append(rows(of: result, statement: names[index]))
            case PGRES_PIPELINE_ABORTED:
                break
            default:
                failure = failure ?? error(from: result, "pipeline execute")
            }
            PQclear(result)
            // Each statement's results end with a NULL.
            while let extra = try nextResult(connection, deadline: deadline) { PQclear(extra) }
        }
        // Then the sync point.
        var synced = false
        while !synced, let result = try nextResult(connection, deadline: deadline) {
            synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
        }
        if PQexitPipelineMode(connection) != 1 {
            // Results we couldn't account for: this session can't be trusted any more.
            let broken = StorageError(.unavailable, "the database connection is out of step", detail: nil, retry: .reconnect)
            try? connect()
            throw failure ?? broken
        }
        if let failure { throw failure }
        guard results.count == statements.count else { throw error(from: nil, "pipeline") }
        return Array(results.dropFirst(prefix.count))
    }

    /// A prepared statement of this connection and whether it returns nothing (a write without
    /// `RETURNING`, which may be held back).
    private struct Prepared {
        var name: String
        var returnsNothing: Bool
    }

    /// A statement sent with the next round trip: transaction control, or a held write.
    private struct Pending {
        var statement: SQLStatement
        var isWrite: Bool
    }

    /// `sql`'s prepared statement on this connection, prepared now if it is new.
    private func prepare(_ sql: String) throws -> Prepared {
        if let known = prepared[sql] { return known }
        nextStatement += 1
        let name = "entitled_\(nextStatement)"
        guard let connection else { throw Self.disconnected }
        traffic.prepared()
        let result = try collect(connection, sent: PQsendPrepare(connection, name, sql, 0, nil), "prepare")
        defer { PQclear(result) }
        try check(result, "prepare")
        let verb = sql.drop(while: \.isWhitespace).prefix(6).uppercased()
        let statement = Prepared(
            name: name, returnsNothing: ["INSERT", "UPDATE", "DELETE"].contains(verb) && !sql.uppercased().contains("RETURNING"))
        prepared[sql] = statement
        return statement
    }

    private func check(_ result: OpaquePointer?, _ what: String) throws {
        guard let result else {
            throw error(from: nil, what)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            throw error(from: result, what)
        }
    }

    private static let disconnected = StorageError(.unavailable, "not connected to PostgreSQL", detail: nil, retry: .reconnect)

    private func error(from result: OpaquePointer?, _ what: String) -> StorageError {
        let message: String
        var state = ""
        if let result {
            message = String(cString: PQresultErrorMessage(result))
            if let field = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) { state = String(cString: field) }
        } else {
            message = connection.map { String(cString: PQerrorMessage($0)) } ?? "no connection"
        }
        let detail = "\(what): [\(state)] \(message.trimmingWhitespace())"
        if !isHealthy || state.hasPrefix("08") || state.hasPrefix("57P") {
            return StorageError(.unavailable, "the database is unavailable", detail: detail, retry: .reconnect)
        }
        switch state {
        case "40001", "40P01":
            return StorageError(.conflict, "a concurrent transaction conflicted", detail: detail, retry: .transaction)
        case "57014":
            // statement_timeout: the statement was cancelled, the session is fine.
            return StorageError(.unavailable, "the database did not answer in time", detail: detail, retry: .none)
        case "3D000", "28000", "28P01", "53300":
            return StorageError(.unavailable, "the database is unavailable", detail: detail, retry: .none)
        default:
            if state.hasPrefix("23") {
                return StorageError(.constraint, "a database constraint rejected the write", detail: detail, retry: .none)
            }
            if state.hasPrefix("53") || state.hasPrefix("58") {
                return StorageError(.unavailable, "the database is unavailable", detail: detail, retry: .none)
            }
            return StorageError(.internal, "database error", detail: detail, retry: .none)
        }
    }
}
