import AppStoreTesting
import EntitledCrypto
import Testing

@testable import Storage

/// Rows decoded with a statement's remembered plan (``SQLRow/decode(_:)``) against the lookup of
/// every column by name (``SQLRow/decodeByName(_:)``) and against the values the rows were made
/// from: every column type the stores' row types use, NULLs, both backends' value forms.
@Suite struct SQLRowDecoderTests {
    enum Kind: String, Decodable, CaseIterable { case renewal, refund, expiry }

    /// One property of every type the stores' row types read.
    struct Every: Decodable, Equatable {
        var text: String
        var optionalText: String?
        var number: Int64
        var optionalNumber: Int64?
        var count: Int
        var optionalCount: Int?
        var flag: Bool
        var optionalFlag: Bool?
        var bytes: [UInt8]
        var optionalBytes: [UInt8]?
        var kind: Kind
        var optionalKind: Kind?
    }

    /// The columns of ``Every``, as SQL names them.
    static let columns = [
        "text", "optional_text", "number", "optional_number", "count", "optional_count", "flag", "optional_flag", "bytes",
        "optional_bytes", "kind", "optional_kind",
    ]

    /// A value of every column, about a third of the optional ones NULL.
    static func generated(_ random: inout SplitMix64) -> Every {
        func text() -> String {
            let pieces = ["", "a", "user-42", "é", "ü🙂", "x'); --", "\\x00", String(repeating: "long text ", count: 4)]
            return (0..<Int.random(in: 1...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        func bytes() -> [UInt8] { (0..<Int.random(in: 0...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) } }
        func maybe<T>(_ make: () -> T) -> T? { Int.random(in: 0..<3, using: &random) == 0 ? nil : make() }
        let numbers: [Int64] = [0, 1, -1, Int64.max, Int64.min, 1_700_000_000_000]
        func number() -> Int64 { Bool.random(using: &random) ? numbers.randomElement(using: &random)! : Int64.random(in: .min ... .max, using: &random) }
        return Every(
            text: text(), optionalText: maybe(text), number: number(), optionalNumber: maybe(number),
            count: Int(number()), optionalCount: maybe { Int(number()) }, flag: Bool.random(using: &random),
            optionalFlag: maybe { Bool.random(using: &random) }, bytes: bytes(), optionalBytes: maybe(bytes),
            kind: Kind.allCases.randomElement(using: &random)!, optionalKind: maybe { Kind.allCases.randomElement(using: &random)! })
    }

    /// The values SQLite returns for `value`'s columns (in ``columns`` order).
    static func sqliteValues(_ value: Every) -> [SQLValue] {
        [
            .text(value.text), SQLValue(value.optionalText), .int(value.number), SQLValue(value.optionalNumber),
            .int(Int64(value.count)), SQLValue(value.optionalCount.map { Int64($0) }), SQLValue(value.flag),
            value.optionalFlag.map(SQLValue.init) ?? .null, .blob(value.bytes), value.optionalBytes.map { .blob($0) } ?? .null,
            .text(value.kind.rawValue), SQLValue(value.optionalKind?.rawValue),
        ]
    }

    /// The values PostgreSQL returns: text, `bytea` as `\x` and hex digits.
    static func postgresValues(_ value: Every) -> [SQLValue] {
        sqliteValues(value).map { column in
            switch column {
            case .null, .text: column
            case .int(let number): .text(String(number))
            case .blob(let bytes): .text("\\x" + Hex.encode(bytes))
            }
        }
    }

    /// The decoded value, or the error's description.
    static func outcome(_ decode: () throws -> Every) -> String {
        do { return "\(try decode())" } catch { return "error: \(error)" }
    }

    @Test(arguments: ["sqlite", "postgres"])
    func plannedDecodingMatchesTheLookupByNameOnGeneratedRows(_ form: String) throws {
        var random = SplitMix64(seed: form == "sqlite" ? 1 : 2)
        // The columns in another order than the properties, with columns no property reads.
        let names = (Self.columns + ["unused", "other_column"]).shuffled(using: &random)
        let columns = SQLColumns(names)
        for index in 0..<300 {
            let value = Self.generated(&random)
            let values = form == "sqlite" ? Self.sqliteValues(value) : Self.postgresValues(value)
            var byName = Dictionary(uniqueKeysWithValues: zip(Self.columns, values))
            byName["unused"] = .int(Int64(index))
            byName["other_column"] = .null
            // Now and then a NULL where the property is not optional: an error either way.
            let broken = index % 25 == 24 ? ["text", "number", "flag", "kind"].randomElement(using: &random) : nil
            if let broken { byName[broken] = .null }
            let row = SQLRow(values: names.map { byName[$0]! }, columns: columns)
            let planned = Self.outcome { try row.decode(Every.self) }
            #expect(planned == Self.outcome { try row.decodeByName(Every.self) })
            if broken == nil { #expect(planned == "\(value)") } else { #expect(planned.hasPrefix("error: ")) }
        }
        let plan = try #require(columns.plan(for: ObjectIdentifier(Every.self)))
        #expect(plan.keys == Self.columns.map(SQLColumns.camelCase))
        #expect(plan.positions == Self.columns.map { names.firstIndex(of: $0)! })
    }

    /// Reads `kind`, then `alpha` and `shared` or `shared` and `beta`: rows of the other kind ask
    /// for their columns in another order than the recorded plan.
    struct Branching: Decodable, Equatable {
        var kind: String
        var alpha: Int64?
        var beta: Int64?
        var shared: String

        enum CodingKeys: String, CodingKey { case kind, alpha, beta, shared }

        init(kind: String, alpha: Int64?, beta: Int64?, shared: String) {
            (self.kind, self.alpha, self.beta, self.shared) = (kind, alpha, beta, shared)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kind = try container.decode(String.self, forKey: .kind)
            if kind == "a" {
                alpha = try container.decode(Int64.self, forKey: .alpha)
                shared = try container.decode(String.self, forKey: .shared)
            } else {
                shared = try container.decode(String.self, forKey: .shared)
                beta = try container.decode(Int64.self, forKey: .beta)
            }
        }
    }

    @Test func keysAskedOutOfThePlansOrderAreLookedUpByName() throws {
        let columns = SQLColumns(["shared", "beta", "kind", "alpha"])
        for index in 0..<6 {
            let isA = index % 2 == 0
            let row = SQLRow(values: [.text("s\(index)"), .int(Int64(index) * 10), .text(isA ? "a" : "b"), .int(Int64(index))], columns: columns)
            let expected =
                isA
                ? Branching(kind: "a", alpha: Int64(index), beta: nil, shared: "s\(index)")
                : Branching(kind: "b", alpha: nil, beta: Int64(index) * 10, shared: "s\(index)")
            #expect(try row.decode(Branching.self) == expected)
        }
        #expect(try #require(columns.plan(for: ObjectIdentifier(Branching.self))).keys == ["kind", "alpha", "shared"])
    }

    /// The same through a real statement on each backend: a table of every column type, written
    /// with binds and read back.
    @Test(arguments: Backend.all)
    func plannedDecodingMatchesTheLookupByNameOnStoredRows(_ backend: Backend) async throws {
        try await withStore(backend, checksRebuild: false) { store, _ in
            let sessions = try #require(store as? any SessionBackedStore)
            var random = SplitMix64(seed: 3)
            let generated = (0..<60).map { _ in Self.generated(&random) }
            let outcomes = try await sessions.write { session in
                let bytes = session.dialect == .postgres ? "BYTEA" : "BLOB"
                try session.execute(
                    """
                    CREATE TABLE row_decoding (id BIGINT PRIMARY KEY, text TEXT NOT NULL, optional_text TEXT, number BIGINT NOT NULL,
                        optional_number BIGINT, count BIGINT NOT NULL, optional_count BIGINT, flag BIGINT NOT NULL, optional_flag BIGINT,
                        bytes \(bytes) NOT NULL, optional_bytes \(bytes), kind TEXT NOT NULL, optional_kind TEXT)
                    """)
                for (id, value) in generated.enumerated() {
                    try session.query(
                        """
                        INSERT INTO row_decoding (id, text, optional_text, number, optional_number, count, optional_count, flag,
                            optional_flag, bytes, optional_bytes, kind, optional_kind)
                        VALUES (\(id), \(value.text), \(value.optionalText), \(value.number), \(value.optionalNumber), \(value.count),
                            \(value.optionalCount), \(value.flag), \(value.optionalFlag), \(value.bytes), \(value.optionalBytes),
                            \(value.kind.rawValue), \(value.optionalKind?.rawValue))
                        """)
                }
                var outcomes: [[String]] = []
                // Row by row, one statement: the first row records the plan, the others replay it.
                for id in generated.indices {
                    let rows = try session.query("SELECT * FROM row_decoding WHERE id = \(id)")
                    outcomes += rows.map { row in
                        [Self.outcome { try row.decode(Every.self) }, Self.outcome { try row.decodeByName(Every.self) }]
                    }
                }
                try session.execute("DROP TABLE row_decoding")
                return outcomes
            }
            #expect(outcomes.count == generated.count)
            for (value, outcome) in zip(generated, outcomes) {
                #expect(outcome == ["\(value)", "\(value)"])
            }
        }
    }

    // The hot reads' row types: their ``SQLRowReadable`` initialisers against the Codable decoding.

    /// A stored state row's values (``Ledger/StateColumns``), about a third of the optional ones NULL.
    static func generatedState(_ random: inout SplitMix64) -> Ledger.StateColumns {
        let every = (0..<3).map { _ in Self.generated(&random) }
        return Ledger.StateColumns(
            id: every[0].number, appUserId: every[0].text, appAccountToken: every[1].text, createdAt: every[1].number,
            state: every[2].text, projectionRows: every[0].optionalText ?? "", computedAt: every[2].number,
            projectionError: every[1].optionalText, answer: every[2].optionalText)
    }

    /// The state row's columns as ``Ledger/stateColumns`` names them, with SQLite's values.
    static func stateValues(_ value: Ledger.StateColumns) -> [String: SQLValue] {
        [
            "id": .int(value.id), "app_user_id": .text(value.appUserId), "app_account_token": .text(value.appAccountToken),
            "created_at": .int(value.createdAt), "state": .text(value.state), "projection_rows": .text(value.projectionRows),
            "computed_at": .int(value.computedAt), "projection_error": SQLValue(value.projectionError),
            "answer": SQLValue(value.answer),
        ]
    }

    /// The answer row (``Ledger/AnswerColumns``) of the same values.
    static func answer(_ value: Ledger.StateColumns) -> Ledger.AnswerColumns {
        Ledger.AnswerColumns(
            id: value.id, appUserId: value.appUserId, appAccountToken: value.appAccountToken, createdAt: value.createdAt,
            answer: value.answer, computedAt: value.computedAt, projectionError: value.projectionError)
    }

    /// The row read by its initialiser (through the plan), or the error's description.
    static func readOutcome<Row: SQLRowReadable>(_ row: SQLRow, _ type: Row.Type) -> String {
        do { return "\(try row.read(Row.self))" } catch { return "error: \(error)" }
    }

    /// The row decoded by Codable, looking each column up by name, or the error's description.
    static func decodedOutcome<Row: Decodable>(_ row: SQLRow, _ type: Row.Type) -> String {
        do { return "\(try row.decodeByName(Row.self))" } catch { return "error: \(error)" }
    }

    @Test(arguments: ["sqlite", "postgres"])
    func hotRowInitialisersMatchTheCodableDecodingOnGeneratedRows(_ form: String) throws {
        var random = SplitMix64(seed: form == "sqlite" ? 4 : 5)
        let stateNames = ["id", "app_user_id", "app_account_token", "created_at", "state", "projection_rows", "computed_at",
            "projection_error", "answer"]
        // Other orders than the properties', with columns neither type reads.
        let names = (stateNames + ["commit_lsn", "unused"]).shuffled(using: &random)
        let answerNames = stateNames.filter { $0 != "state" && $0 != "projection_rows" }.shuffled(using: &random)
        let (stateColumns, answerColumns) = (SQLColumns(names), SQLColumns(answerNames))
        for index in 0..<300 {
            let value = Self.generatedState(&random)
            var byName = Self.stateValues(value)
            byName["commit_lsn"] = .int(Int64(index))
            byName["unused"] = .null
            // Now and then a NULL where the property is not optional: an error either way.
            let broken = index % 25 == 24 ? ["id", "app_user_id", "created_at", "computed_at"].randomElement(using: &random) : nil
            if let broken { byName[broken] = .null }
            func row(_ names: [String], _ columns: SQLColumns) -> SQLRow {
                let values = names.map { byName[$0]! }
                guard form == "postgres" else { return SQLRow(values: values, columns: columns) }
                return SQLRow(values: values.map { if case .int(let number) = $0 { .text(String(number)) } else { $0 } }, columns: columns)
            }
            let (stateRow, answerRow) = (row(names, stateColumns), row(answerNames, answerColumns))
            // Planned Codable decoding now and then: the two share a statement's plan.
            if index % 7 == 3 {
                _ = try? stateRow.decode(Ledger.StateColumns.self)
                _ = try? answerRow.decode(Ledger.AnswerColumns.self)
            }
            let read = (Self.readOutcome(stateRow, Ledger.StateColumns.self), Self.readOutcome(answerRow, Ledger.AnswerColumns.self))
            #expect(read.0 == Self.decodedOutcome(stateRow, Ledger.StateColumns.self))
            #expect(read.1 == Self.decodedOutcome(answerRow, Ledger.AnswerColumns.self))
            if broken == nil {
                #expect(read.0 == "\(value)")
                #expect(read.1 == "\(Self.answer(value))")
            } else {
                #expect(read.0.hasPrefix("error: ") && read.1.hasPrefix("error: "))
            }
        }
        #expect(try #require(stateColumns.plan(for: ObjectIdentifier(Ledger.StateColumns.self))).keys.count == 9)
        #expect(try #require(answerColumns.plan(for: ObjectIdentifier(Ledger.AnswerColumns.self))).keys.count == 7)
    }

    /// A row type without the column its initialiser asks for fails, as the Codable decoding does.
    @Test func aMissingColumnFailsTheInitialiser() {
        let row = SQLRow(values: [.int(1), .text("user")], columns: SQLColumns(["id", "app_user_id"]))
        #expect(Self.readOutcome(row, Ledger.AnswerColumns.self).hasPrefix("error: "))
        #expect(Self.readOutcome(row, Ledger.AnswerColumns.self) == Self.decodedOutcome(row, Ledger.AnswerColumns.self))
    }

    /// The same through the hot reads' own statements on each backend: stored states read back by
    /// the state and answer queries, row after row of one statement.
    @Test(arguments: Backend.all)
    func hotRowInitialisersMatchTheCodableDecodingOnStoredRows(_ backend: Backend) async throws {
        try await withStore(backend, checksRebuild: false) { store, _ in
            let sessions = try #require(store as? any SessionBackedStore)
            var random = SplitMix64(seed: 6)
            let generated = (0..<40).map { index in
                var value = Self.generatedState(&random)
                value.appUserId = "row-reader-\(index)-" + value.appUserId
                value.appAccountToken = "token-\(index)-" + value.appAccountToken
                return value
            }
            // Per row: the stored state, what its initialiser read and what Codable decoded; the same for the answer.
            let outcomes = try await sessions.write { session in
                try generated.map { value -> [String] in
                    let id = try #require(
                        try session.value(
                            """
                            INSERT INTO customers (app_user_id, app_account_token, created_at)
                            VALUES (\(value.appUserId), \(value.appAccountToken), \(value.createdAt)) RETURNING id
                            """, as: Int64.self))
                    try session.query(
                        """
                        INSERT INTO customer_states (app_user_id, customer_id, app_account_token, created_at, state, projection_rows,
                            computed_at, projection_error, answer)
                        VALUES (\(value.appUserId), \(id), \(value.appAccountToken), \(value.createdAt), \(value.state),
                            \(value.projectionRows), \(value.computedAt), \(value.projectionError), \(value.answer))
                        """)
                    var stored = value
                    stored.id = id
                    let state = try #require(try session.query(Ledger.state(appUserId: value.appUserId)).first)
                    let answer = try #require(try session.query(Ledger.answer(appUserId: value.appUserId)).first)
                    return [
                        "\(stored)", Self.readOutcome(state, Ledger.StateColumns.self), Self.decodedOutcome(state, Ledger.StateColumns.self),
                        "\(Self.answer(stored))", Self.readOutcome(answer, Ledger.AnswerColumns.self),
                        Self.decodedOutcome(answer, Ledger.AnswerColumns.self),
                    ]
                }
            }
            #expect(outcomes.count == generated.count)
            for outcome in outcomes {
                #expect(outcome[1] == outcome[0] && outcome[2] == outcome[0])
                #expect(outcome[4] == outcome[3] && outcome[5] == outcome[3])
            }
        }
    }
}
