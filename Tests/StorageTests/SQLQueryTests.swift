import Testing

@testable import Storage

/// The query type: every interpolated value is a bind of its own, rendered per dialect, and rows
/// decode by column name.
@Suite struct SQLQueryTests {
    @Test func interpolatedValuesBecomeBindsInOrder() {
        let user = "alice'; DROP TABLE customers; --"
        let limit = 20
        let token: String? = nil
        let query: SQLQuery = "SELECT id FROM customers WHERE app_user_id = \(user) AND token IS \(token) LIMIT \(limit)"
        #expect(query.text(for: .postgres) == "SELECT id FROM customers WHERE app_user_id = $1 AND token IS $2 LIMIT $3")
        #expect(query.text(for: .sqlite) == "SELECT id FROM customers WHERE app_user_id = ? AND token IS ? LIMIT ?")
        #expect(query.binds == [.text(user), .null, .int(20)])
    }

    @Test func literalsAloneBindNothing() {
        let query: SQLQuery = "SELECT 1"
        #expect(query.text(for: .postgres) == "SELECT 1")
        #expect(query.binds.isEmpty)
    }

    @Test func fragmentsSpliceTheirTextAndNumberTheirBindsInPlace() {
        let condition: SQLQuery = "kind = \("renewal") AND signed_date > \(Int64(7))"
        let columns: SQLQuery = "id, kind"
        let query: SQLQuery = "SELECT \(columns) FROM facts WHERE customer_id = \(Int64(3)) AND \(condition) LIMIT \(10)"
        #expect(
            query.text(for: .postgres) == "SELECT id, kind FROM facts WHERE customer_id = $1 AND kind = $2 AND signed_date > $3 LIMIT $4")
        #expect(query.binds == [.int(3), .text("renewal"), .int(7), .int(10)])
        let order: SQLQuery = "a"
        let joined = SQLQuery.joined(["a = \(1)", "b = \(2)"], separator: " AND ") + " ORDER BY \(order)"
        #expect(joined.text(for: .postgres) == "a = $1 AND b = $2 ORDER BY a")
        #expect(joined.binds == [.int(1), .int(2)])
    }

    @Test func listsBindEachValueAndAnEmptyListMatchesNothing() {
        let ids: [Int64] = [4, 5, 6]
        let query: SQLQuery = "SELECT * FROM t WHERE id IN (\(list: ids)) AND x = \(true)"
        #expect(query.text(for: .postgres) == "SELECT * FROM t WHERE id IN ($1, $2, $3) AND x = $4")
        #expect(query.text(for: .sqlite) == "SELECT * FROM t WHERE id IN (?, ?, ?) AND x = ?")
        #expect(query.binds == [.int(4), .int(5), .int(6), .int(1)])
        let none: SQLQuery = "SELECT * FROM t WHERE id IN (\(list: [Int64]()))"
        #expect(none.text(for: .postgres) == "SELECT * FROM t WHERE id IN (NULL)")
        #expect(none.binds.isEmpty)
    }

    @Test func bytesBindAsBlobs() {
        let query: SQLQuery = "INSERT INTO t (b) VALUES (\([UInt8]([0, 1, 255])))"
        #expect(query.binds == [.blob([0, 1, 255])])
    }

    /// A fixed query renders as the same query built at each call would, its parameter bound
    /// wherever it appears, also inside a fragment; spliced into another query it is a fragment.
    @Test func aFixedQueryIsTheQueryItWasBuiltFrom() {
        let columns: SQLQuery = "id, app_user_id"
        let build: (String) -> SQLQuery = { "SELECT \(columns) FROM customers WHERE app_user_id = \($0) OR alias = \($0)" }
        let fixed = SQLFixedQuery<String> { user in "SELECT \(columns) FROM customers WHERE app_user_id = \(user) OR alias = \(user)" }
        for user in ["alice", "bob'; --"] {
            let query = fixed(user)
            #expect(query.fixed != nil)
            for dialect in [SQLDialect.sqlite, .postgres] { #expect(query.text(for: dialect) == build(user).text(for: dialect)) }
            #expect(query.binds == build(user).binds)
            let spliced: SQLQuery = "SELECT count(*) FROM (\(query)) AS c WHERE \(Int64(1)) = 1"
            #expect(spliced.fixed == nil)
            #expect(spliced.text(for: .postgres) == "SELECT count(*) FROM (\(build(user).text(for: .postgres))) AS c WHERE $3 = 1")
            #expect(spliced.binds == [.text(user), .text(user), .int(1)])
        }
        let fragment = SQLFixedQuery<Int64> { id in "SELECT 1 WHERE \(SQLQuery.joined(["a = \(id)", "b = \(id)"], separator: " AND "))" }
        #expect(fragment(7).text(for: .postgres) == "SELECT 1 WHERE a = $1 AND b = $2")
        #expect(fragment(7).binds == [.int(7), .int(7)])
    }

    /// Run on each backend, a fixed query answers as the query built at each call does, one
    /// prepared statement (one set of column names) serving every call.
    @Test(arguments: Backend.all)
    func aFixedQueryRunsAsTheQueryItWasBuiltFrom(_ backend: Backend) async throws {
        try await withSession(backend) { session in
            let fixed = SQLFixedQuery<Int64> { id in "SELECT CAST(\(id) AS bigint) AS id, CAST(\(id) AS bigint) * 2 AS twice" }
            let first = try #require(try session.query(fixed(3)).first)
            let again = try #require(try session.query(fixed(5)).first)
            #expect(first.values.map { try? SQLRow(values: [$0]).int(0) } == [3, 6])
            #expect(try again.int(0) == 5 && again.int(1) == 10)
            #expect(first.columns === again.columns)
            let built = try #require(try session.query("SELECT CAST(\(Int64(5)) AS bigint) AS id, CAST(\(Int64(5)) AS bigint) * 2 AS twice").first)
            #expect(try built.int(0) == 5 && built.int(1) == 10)
        }
    }

    struct Row: Decodable, Equatable {
        var appUserId: String
        var id: Int64
        var token: String?
        var active: Bool
        var body: [UInt8]?
    }

    enum Kind: String, Decodable { case renewal, refund }

    @Test(arguments: Backend.all)
    func rowsDecodeByColumnNameOnEveryBackend(_ backend: Backend) async throws {
        try await withSession(backend) { session in
            let hostile = "x'); DELETE FROM customers; --"
            // Selected in another order than the struct declares; snake_case names.
            let rows = try session.rows(
                """
                SELECT NULL AS body, CAST(\(true) AS bigint) AS active, CAST(\(hostile) AS text) AS app_user_id,
                    CAST(\(Int64(42)) AS bigint) AS id, CAST(\(Optional<String>.none) AS text) AS token
                """, as: Row.self)
            #expect(rows == [Row(appUserId: hostile, id: 42, token: nil, active: true, body: nil)])
            #expect(try session.values("SELECT CAST(\("refund") AS text) AS kind", as: Kind.self) == [.refund])
            #expect(try session.value("SELECT CAST(\(Int64(7)) AS bigint) + CAST(\(Int64(5)) AS bigint) AS total", as: Int64.self) == 12)
        }
    }

    @Test(arguments: Backend.all)
    func aMissingColumnIsAnErrorEvenForAnOptional(_ backend: Backend) async throws {
        try await withSession(backend) { session in
            #expect(throws: StorageError.self) {
                _ = try session.rows("SELECT 1 AS active, 'a' AS app_user_id, 1 AS id, NULL AS body", as: Row.self)
            }
            #expect(throws: StorageError.self) { _ = try session.values("SELECT 1 AS a, 2 AS b", as: Int64.self) }
        }
    }

    /// A statement's results share one set of column names: they are named (and indexed for
    /// decoding by name) once per prepared statement, not for every result.
    @Test(arguments: Backend.all)
    func aStatementsResultsShareTheirColumnNames(_ backend: Backend) async throws {
        try await withSession(backend) { session in
            let query: (Int64) -> SQLQuery = { "SELECT CAST(\($0) AS bigint) AS id, CAST('a' AS text) AS app_user_id" }
            let first = try #require(try session.query(query(1)).first)
            let again = try #require(try session.pipeline([query(2), query(3)]).first?.first)
            #expect(first.columns === again.columns)
            #expect(first.columns.names == ["id", "app_user_id"])
            #expect(try again.decode(Named.self) == Named(id: 2, appUserId: "a"))
            // Another statement of as many columns has its own.
            let other = try #require(try session.query("SELECT CAST(1 AS bigint) AS a, CAST(2 AS bigint) AS b").first)
            #expect(other.columns.names == ["a", "b"])
        }
    }

    struct Named: Decodable, Equatable {
        var id: Int64
        var appUserId: String
    }

    /// Runs `body` on a read session of a fresh store.
    func withSession(_ backend: Backend, _ body: @escaping @Sendable (any SQLSession) throws -> Void) async throws {
        try await withStore(backend) { store, _ in
            let sessions = try #require(store as? any SessionBackedStore)
            try await sessions.read { session in try body(session) }
        }
    }
}
