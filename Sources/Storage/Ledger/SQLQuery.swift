/// A SQL statement and its bound values, built by string interpolation: every interpolated value
/// becomes a placeholder and its bind, so the placeholders cannot drift from the values.
///
///     let query: SQLQuery = "SELECT id FROM customers WHERE app_user_id = \(appUserId) LIMIT \(limit)"
///
/// Only literals and other queries (fragments: a column list, a condition) are spliced as text;
/// ``SQLQuery/StringInterpolation/appendInterpolation(list:)`` binds a list of values. The text is
/// rendered for the session's dialect: `$1, $2, …` for PostgreSQL, `?` for SQLite.
struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    /// The literal text around the binds: one more than ``binds``.
    private(set) var literals: [String]
    /// The bound values, in order of appearance.
    private(set) var binds: [SQLValue]

    init(stringLiteral value: String) {
        literals = [value]
        binds = []
    }

    /// SQL text taken as it is, binding nothing: only for text assembled from this module's own
    /// constants (a table's name and columns), never from input.
    init(verbatim sql: String) {
        literals = [sql]
        binds = []
    }

    init(stringInterpolation: StringInterpolation) {
        literals = stringInterpolation.literals
        binds = stringInterpolation.binds
    }

    /// The statement's text with placeholders for `dialect`.
    func text(for dialect: SQLDialect) -> String {
        guard !binds.isEmpty else { return literals[0] }
        var text = literals[0]
        for index in binds.indices {
            switch dialect {
            case .postgres: text += "$" + String(index + 1)
            case .sqlite: text += "?"
            }
            text += literals[index + 1]
        }
        return text
    }

    /// Appends `other` (its text and binds) after this query's text.
    static func + (lhs: SQLQuery, rhs: SQLQuery) -> SQLQuery {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        interpolation.appendInterpolation(lhs)
        interpolation.appendInterpolation(rhs)
        return SQLQuery(stringInterpolation: interpolation)
    }

    /// The fragments joined by `separator` (e.g. conditions by `" AND "`).
    static func joined(_ fragments: [SQLQuery], separator: String) -> SQLQuery {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { interpolation.appendLiteral(separator) }
            interpolation.appendInterpolation(fragment)
        }
        return SQLQuery(stringInterpolation: interpolation)
    }

    struct StringInterpolation: StringInterpolationProtocol {
        var literals: [String] = [""]
        var binds: [SQLValue] = []

        init(literalCapacity: Int, interpolationCount: Int) {
            binds.reserveCapacity(interpolationCount)
            literals.reserveCapacity(interpolationCount + 1)
        }

        mutating func appendLiteral(_ literal: String) {
            literals[literals.count - 1] += literal
        }

        /// A bound value.
        mutating func appendInterpolation(_ value: some SQLBindable) {
            binds.append(value.sqlValue)
            literals.append("")
        }

        /// A fragment: its text spliced, its values bound in place.
        mutating func appendInterpolation(_ fragment: SQLQuery) {
            appendLiteral(fragment.literals[0])
            for (index, value) in fragment.binds.enumerated() {
                binds.append(value)
                literals.append(fragment.literals[index + 1])
            }
        }

        /// Values bound one by one, separated by commas (for `IN (…)`); `NULL` when empty, so that
        /// `x IN (NULL)` matches nothing.
        mutating func appendInterpolation<Value: SQLBindable>(list values: [Value]) {
            guard !values.isEmpty else { return appendLiteral("NULL") }
            for (index, value) in values.enumerated() {
                if index > 0 { appendLiteral(", ") }
                appendInterpolation(value)
            }
        }
    }
}

/// A Swift value that binds as one SQL value.
protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    var sqlValue: SQLValue { self }
}

extension String: SQLBindable {
    var sqlValue: SQLValue { .text(self) }
}

extension Substring: SQLBindable {
    var sqlValue: SQLValue { .text(String(self)) }
}

extension Int64: SQLBindable {
    var sqlValue: SQLValue { .int(self) }
}

extension Int: SQLBindable {
    var sqlValue: SQLValue { .int(Int64(self)) }
}

extension Int32: SQLBindable {
    var sqlValue: SQLValue { .int(Int64(self)) }
}

/// Stored as 0 or 1.
extension Bool: SQLBindable {
    var sqlValue: SQLValue { .int(self ? 1 : 0) }
}

extension Array: SQLBindable where Element == UInt8 {
    var sqlValue: SQLValue { .blob(self) }
}

/// nil binds `NULL`.
extension Optional: SQLBindable where Wrapped: SQLBindable {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

extension SQLSession {
    /// Runs `query` and returns its rows.
    @discardableResult
    func query(_ query: SQLQuery) throws -> [SQLRow] {
        try self.query(query.text(for: dialect), query.binds)
    }

    /// Runs `query` and decodes each row, by column name, into a `Row`.
    func rows<Row: Decodable>(_ query: SQLQuery, as type: Row.Type = Row.self) throws -> [Row] {
        try self.query(query).map { try $0.decode(Row.self) }
    }

    /// Runs `query` and decodes its first row, by column name, into a `Row` (nil when it has none).
    func row<Row: Decodable>(_ query: SQLQuery, as type: Row.Type = Row.self) throws -> Row? {
        try self.query(query).first.map { try $0.decode(Row.self) }
    }

    /// Runs `query`, which selects one column, and returns that column's values.
    func values<Value: Decodable>(_ query: SQLQuery, as type: Value.Type = Value.self) throws -> [Value] {
        try self.query(query).map { try $0.single(Value.self) }
    }

    /// Runs `query`, which selects one column, and returns its value in the first row (nil when
    /// there is no row).
    func value<Value: Decodable>(_ query: SQLQuery, as type: Value.Type = Value.self) throws -> Value? {
        try self.query(query).first.map { try $0.single(Value.self) }
    }

    /// Runs the queries in order (on PostgreSQL in one round trip) and returns each one's rows.
    @discardableResult
    func pipeline(_ queries: [SQLQuery]) throws -> [[SQLRow]] {
        try pipeline(queries.map { SQLStatement($0.text(for: dialect), parameters: $0.binds) })
    }
}
