import Synchronization

/// A result's column names, shared by its rows: each is found by its name as SQL spells it
/// (`app_user_id`) or as a Swift property does (`appUserId`).
///
/// The results of one prepared statement share one `SQLColumns`, which also remembers, for each
/// row type decoded from them, the positions its decoder asked for in the order it asked
/// (``SQLRowPlan``): later rows then find each column by one comparison of the key with the one
/// expected next, not by hashing its name.
final class SQLColumns: Sendable {
    let names: [String]
    private let positions: [String: Int]
    /// The plans of the row types decoded so far (few: one or two per statement).
    private let plans = Mutex<[SQLRowPlan]>([])
    /// More row types than any statement decodes; beyond it rows are decoded without a plan.
    private static let planLimit = 8

    /// No names (a row built by hand).
    static let none = SQLColumns([])

    init(_ names: [String]) {
        self.names = names
        var positions: [String: Int] = [:]
        for (index, name) in names.enumerated().reversed() {
            positions[name] = index
            positions[Self.camelCase(name)] = index
        }
        self.positions = positions
    }

    /// The position of the column `name`, nil when the result has none.
    func position(_ name: String) -> Int? { positions[name] }

    /// The plan remembered for the row type `type`.
    func plan(for type: ObjectIdentifier) -> SQLRowPlan? {
        plans.withLock { plans in plans.first { $0.type == type } }
    }

    /// Remembers `plan` (the first one recorded for its type wins).
    func remember(_ plan: SQLRowPlan) {
        plans.withLock { plans in
            guard plans.count < Self.planLimit, !plans.contains(where: { $0.type == plan.type }) else { return }
            plans.append(plan)
        }
    }

    /// `app_user_id` → `appUserId`.
    static func camelCase(_ name: String) -> String {
        guard name.contains("_") else { return name }
        var result = ""
        var upper = false
        for character in name {
            if character == "_" {
                upper = !result.isEmpty
            } else {
                result += upper ? character.uppercased() : String(character)
                upper = false
            }
        }
        return result
    }
}

/// The column lookups one decode of a row type made, in order: the keys it asked for and the
/// positions they named.
struct SQLRowPlan: Sendable {
    let type: ObjectIdentifier
    let keys: [String]
    let positions: [Int]
}

extension SQLRow {
    /// The row decoded into `Row`, each property from the column of its name (snake_case columns
    /// match camelCase properties). A property whose column the result lacks is an error, optional
    /// or not, so a misspelt name cannot read as NULL.
    ///
    /// The first row of a statement decoded into `Row` records the positions it looks up; the next
    /// ones replay them (``SQLRowPlan``), falling back to the lookup by name for any key that is
    /// not the one expected, so a plan changes the cost, never the result.
    func decode<Row: Decodable>(_ type: Row.Type) throws -> Row {
        try withPlan(for: Row.self) { try Row(from: SQLRowDecoder(lookup: $0)) }
    }

    /// `make`'s value, its lookups replaying the statement's plan for `Row`, or recording it when
    /// there is none yet.
    func withPlan<Row>(for type: Row.Type, _ make: (SQLColumnLookup) throws -> Row) throws -> Row {
        let identifier = ObjectIdentifier(Row.self)
        if let plan = columns.plan(for: identifier) {
            return try make(SQLColumnLookup(row: self, replaying: plan))
        }
        let lookup = SQLColumnLookup(row: self, recording: true)
        let value = try make(lookup)
        if let plan = lookup.recorded(for: identifier) { columns.remember(plan) }
        return value
    }

    /// The row decoded into `Row` by looking each column up by its name, neither using nor
    /// recording a plan.
    func decodeByName<Row: Decodable>(_ type: Row.Type) throws -> Row {
        try Row(from: SQLRowDecoder(lookup: SQLColumnLookup(row: self, recording: false)))
    }

    /// The value of the row's only column.
    func single<Value: Decodable>(_ type: Value.Type) throws -> Value {
        guard values.count == 1 else {
            throw StorageError(.internal, "expected one column", detail: "\(values.count) columns")
        }
        return try SQLColumnDecoder(row: self, index: 0, name: columns.names.first ?? "column").decode(Value.self)
    }

    /// The position of the column `name`.
    func position(_ name: String) throws -> Int {
        guard let index = columns.position(name), index < values.count else {
            throw StorageError(.internal, "no column \(name) in the result")
        }
        return index
    }
}

/// Finds the columns of one row's decode: from a plan while the keys are the ones it expects, else
/// by name (recording the lookups when asked to).
final class SQLColumnLookup {
    let row: SQLRow
    private let plan: SQLRowPlan?
    private var next = 0
    private var keys: [String]?
    private var positions: [Int] = []

    init(row: SQLRow, replaying plan: SQLRowPlan) {
        self.row = row
        self.plan = plan
    }

    init(row: SQLRow, recording: Bool) {
        self.row = row
        self.plan = nil
        if recording {
            keys = []
            keys?.reserveCapacity(row.values.count)
            positions.reserveCapacity(row.values.count)
        }
    }

    /// The position of the column `key`.
    func position(_ key: String) throws -> Int {
        if let plan, next < plan.keys.count, plan.keys[next] == key, plan.positions[next] < row.values.count {
            defer { next += 1 }
            return plan.positions[next]
        }
        let position = try row.position(key)
        if keys != nil {
            keys?.append(key)
            positions.append(position)
        }
        return position
    }

    /// The plan of the lookups recorded, nil when none were.
    func recorded(for type: ObjectIdentifier) -> SQLRowPlan? {
        guard let keys, !keys.isEmpty else { return nil }
        return SQLRowPlan(type: type, keys: keys, positions: positions)
    }
}

/// Decodes a row: a keyed container whose keys are column names.
private struct SQLRowDecoder: Decoder {
    let lookup: SQLColumnLookup
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(lookup: lookup))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StorageError(.internal, "a row decodes into a keyed value")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw StorageError(.internal, "a row decodes into a keyed value")
    }

    /// Reads the common column types directly (not through the generic path's type casts), each
    /// key's position found once, also for the optional ones.
    struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let lookup: SQLColumnLookup
        var row: SQLRow { lookup.row }
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.names.compactMap { Key(stringValue: SQLColumns.camelCase($0)) } }

        /// Every key: a missing column fails in ``decodeNil(forKey:)`` rather than reading as nil.
        func contains(_ key: Key) -> Bool { true }

        func index(_ key: Key) throws -> Int { try lookup.position(key.stringValue) }

        func column(_ key: Key) throws -> SQLColumnDecoder {
            SQLColumnDecoder(row: row, index: try index(key), name: key.stringValue)
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = row.values[try index(key)] { return true }
            return false
        }

        func decode(_ type: String.Type, forKey key: Key) throws -> String { try row.text(index(key)) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try row.int(index(key)) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { Int(try row.int(index(key))) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try row.bool(index(key)) }

        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try row.optionalText(index(key)) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try row.optionalInt(index(key)) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try row.optionalInt(index(key)).map { Int($0) } }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try row.optionalInt(index(key)).map { $0 != 0 } }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            let column = try column(key)
            return column.decodeNil() ? nil : try column.decode(T.self)
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try column(key).decode(T.self)
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw StorageError(.internal, "a column holds one value", detail: key.stringValue)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw StorageError(.internal, "a column holds one value", detail: key.stringValue)
        }

        func superDecoder() throws -> any Decoder { SQLRowDecoder(lookup: SQLColumnLookup(row: row, recording: false)) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try column(key) }
    }
}

/// Decodes one column's value: integers, text, bytes (`[UInt8]`), `Bool` (0 or 1), and anything
/// that decodes from one of those (a `RawRepresentable` enumeration).
struct SQLColumnDecoder: Decoder, SingleValueDecodingContainer {
    let row: SQLRow
    let index: Int
    let name: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw StorageError(.internal, "a column holds one value", detail: name)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StorageError(.internal, "a column holds one value", detail: name)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool {
        if case .null = row.values[index] { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try row.bool(index) }
    func decode(_ type: String.Type) throws -> String { try row.text(index) }
    func decode(_ type: Int64.Type) throws -> Int64 { try row.int(index) }
    func decode(_ type: Int.Type) throws -> Int { Int(try row.int(index)) }
    func decode(_ type: Int32.Type) throws -> Int32 {
        guard let value = Int32(exactly: try row.int(index)) else { throw StorageError(.corrupt, "integer out of range", detail: name) }
        return value
    }
    func decode(_ type: Double.Type) throws -> Double { Double(try row.int(index)) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is String.Type: return try row.text(index) as! T
        case is Int64.Type: return try row.int(index) as! T
        case is Int.Type: return Int(try row.int(index)) as! T
        case is Bool.Type: return try row.bool(index) as! T
        case is [UInt8].Type: return try row.blob(index) as! T
        default: return try T(from: self)
        }
    }

    // Unused by the decoders of this module's row types, which read whole columns.
    func decode(_ type: Float.Type) throws -> Float { Float(try row.int(index)) }
    func decode(_ type: Int8.Type) throws -> Int8 { try narrow(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try narrow(Int16.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try narrow(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try narrow(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try narrow(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try narrow(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try narrow(UInt64.self) }

    private func narrow<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let value = T(exactly: try row.int(index)) else { throw StorageError(.corrupt, "integer out of range", detail: name) }
        return value
    }
}
