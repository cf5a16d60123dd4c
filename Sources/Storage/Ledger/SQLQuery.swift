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
    /// How many of the binds are a ``Parameter`` (the one value of an ``SQLFixedQuery``).
    private(set) var parameters = 0
    /// The text rendered once, when the query is an ``SQLFixedQuery``'s.
    private(set) var fixed: SQLFixedText?

    init(stringLiteral value: String) {
        literals = [value]
        binds = []
    }

    /// `fixed`'s statement with `binds`.
    fileprivate init(_ fixed: SQLFixedText, binds: [SQLValue]) {
        literals = fixed.literals
        self.binds = binds
        self.fixed = fixed
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
        parameters = stringInterpolation.parameters
    }

    /// The statement's text with placeholders for `dialect`.
    func text(for dialect: SQLDialect) -> String {
        if let fixed { return fixed.text(for: dialect) }
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

    /// The value of an ``SQLFixedQuery``, bound at each call.
    struct Parameter {
        fileprivate init() {}
    }

    struct StringInterpolation: StringInterpolationProtocol {
        var literals: [String] = [""]
        var binds: [SQLValue] = []
        var parameters = 0

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

        /// A bound value or `NULL`. The same as the overload above (an optional of a bindable
        /// type is bindable); spelled out so that the compiler does not take an optional here
        /// for a description about to be printed and warn at every such query.
        mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) {
            binds.append(value.sqlValue)
            literals.append("")
        }

        /// The fixed query's value (``SQLFixedQuery``), bound at each call.
        mutating func appendInterpolation(_ parameter: Parameter) {
            binds.append(.null)
            literals.append("")
            parameters += 1
        }

        /// A fragment: its text spliced, its values bound in place.
        mutating func appendInterpolation(_ fragment: SQLQuery) {
            parameters += fragment.parameters
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

/// A query whose text is the same at every call, only its one value changing: its text is built
/// and rendered for both dialects once, and a connection may find its prepared statement by the
/// text's identity instead of hashing the text. For the hot reads.
///
///     static let byUser = SQLFixedQuery<String> { appUserId in "SELECT id FROM customers WHERE app_user_id = \(appUserId)" }
///     try session.query(byUser(appUserId))
///
/// Every bind of the query is its parameter (which it may use more than once): a value
/// interpolated into it would be fixed with its text.
struct SQLFixedQuery<Value: SQLBindable>: Sendable {
    private let text: SQLFixedText

    init(_ build: (SQLQuery.Parameter) -> SQLQuery) {
        let query = build(SQLQuery.Parameter())
        precondition(query.parameters == query.binds.count, "a fixed query binds nothing but its parameter")
        text = SQLFixedText(query)
    }

    /// The query with `value` bound.
    func callAsFunction(_ value: Value) -> SQLQuery {
        SQLQuery(text, binds: Array(repeating: value.sqlValue, count: text.literals.count - 1))
    }
}

/// An ``SQLFixedQuery``'s text, rendered once for each dialect.
final class SQLFixedText: Sendable {
    let literals: [String]
    let sqlite: String
    let postgres: String

    fileprivate init(_ query: SQLQuery) {
        literals = query.literals
        sqlite = query.text(for: .sqlite)
        postgres = query.text(for: .postgres)
    }

    func text(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
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
        if let fixed = query.fixed { return try self.query(fixed, query.binds) }
        return try self.query(query.text(for: dialect), query.binds)
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
