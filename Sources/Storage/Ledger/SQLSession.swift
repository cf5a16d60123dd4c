import EntitledCrypto

/// A value bound to, or read from, a SQL statement.
enum SQLValue: Sendable, Hashable {
    case null
    case int(Int64)
    case text(String)
    case blob([UInt8])

    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    init(_ value: Int64?) { self = value.map { .int($0) } ?? .null }
    init(_ value: Bool) { self = .int(value ? 1 : 0) }
}

/// One result row. PostgreSQL returns every value as text; the accessors convert.
struct SQLRow: Sendable {
    var values: [SQLValue]
    /// The result's column names, shared by its rows.
    var columns: SQLColumns = .none

    init(values: [SQLValue], columns: SQLColumns = .none) {
        self.values = values
        self.columns = columns
    }

    func int(_ index: Int) throws -> Int64 {
        guard let value = try optionalInt(index) else {
            throw StorageError(.corrupt, "unexpected NULL", detail: "column \(index)")
        }
        return value
    }

    func optionalInt(_ index: Int) throws -> Int64? {
        switch values[index] {
        case .null: return nil
        case .int(let value): return value
        case .text(let text):
            guard let value = Int64(text) else { throw StorageError(.corrupt, "not an integer", detail: text) }
            return value
        case .blob: throw StorageError(.corrupt, "not an integer", detail: "column \(index) is a blob")
        }
    }

    func bool(_ index: Int) throws -> Bool { try int(index) != 0 }

    func text(_ index: Int) throws -> String {
        guard let value = try optionalText(index) else {
            throw StorageError(.corrupt, "unexpected NULL", detail: "column \(index)")
        }
        return value
    }

    func optionalText(_ index: Int) throws -> String? {
        switch values[index] {
        case .null: return nil
        case .text(let text): return text
        case .int(let value): return String(value)
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The bytes, or nil for NULL.
    func optionalBlob(_ index: Int) throws -> [UInt8]? {
        if case .null = values[index] { return nil }
        return try blob(index)
    }

    func blob(_ index: Int) throws -> [UInt8] {
        switch values[index] {
        case .null: return []
        case .blob(let bytes): return bytes
        case .int(let value): return Array(String(value).utf8)
        case .text(let text):
            // PostgreSQL's text output for bytea is `\x` followed by hex digits.
            guard text.hasPrefix("\\x") else { return Array(text.utf8) }
            guard let bytes = Hex.decode(text.utf8.dropFirst(2)) else { throw StorageError(.corrupt, "bytea is not hex") }
            return bytes
        }
    }
}

/// The SQL dialect differences the shared ledger code needs to know about.
enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

/// A connection the ledger logic runs statements on. Statements are written with PostgreSQL's
/// `$1` placeholders; the SQLite connection rewrites them to `?1`. Every statement is prepared
/// once per connection and cached by its text. Values are always bound, never interpolated.
///
/// Not Sendable: a session belongs to exactly one thread (the SQLite writer, a pool worker).
protocol SQLSession: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs a prepared, parameterized statement and returns its rows.
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow]
    /// Runs a fixed query's statement (``SQLFixedQuery``), which a connection may find by the
    /// text's identity rather than by its text.
    func query(_ fixed: SQLFixedText, _ parameters: [SQLValue]) throws -> [SQLRow]
    /// Runs unparameterized SQL text (transaction control, DDL). May hold several statements.
    func execute(_ sql: String) throws
    /// Runs statements in order — on PostgreSQL in one round trip — and returns each one's rows.
    /// Stops at the first error and throws it.
    func pipeline(_ statements: [SQLStatement]) throws -> [[SQLRow]]
    /// The current write transaction's hot writes, made right before its commit.
    var tail: TransactionTail { get }
}

/// A statement and its parameters, for ``SQLSession/pipeline(_:)``.
struct SQLStatement {
    var sql: String
    var parameters: [SQLValue]

    init(_ sql: String, _ parameters: SQLValue...) {
        self.sql = sql
        self.parameters = parameters
    }

    init(_ sql: String, parameters: [SQLValue]) {
        self.sql = sql
        self.parameters = parameters
    }
}

extension SQLSession {
    func query(_ fixed: SQLFixedText, _ parameters: [SQLValue]) throws -> [SQLRow] {
        try query(fixed.text(for: dialect), parameters)
    }

    @discardableResult
    func query(_ sql: String, _ first: SQLValue, _ rest: SQLValue...) throws -> [SQLRow] {
        try query(sql, [first] + rest)
    }
}

