/// A result's column names, shared by its rows: each is found by its name as SQL spells it
/// (`app_user_id`) or as a Swift property does (`appUserId`).
final class SQLColumns: Sendable {
    let names: [String]
    private let positions: [String: Int]

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

extension SQLRow {
    /// The row decoded into `Row`, each property from the column of its name (snake_case columns
    /// match camelCase properties). A property whose column the result lacks is an error, optional
    /// or not, so a misspelt name cannot read as NULL.
    func decode<Row: Decodable>(_ type: Row.Type) throws -> Row {
        try Row(from: SQLRowDecoder(row: self))
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

/// Decodes a row: a keyed container whose keys are column names.
private struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(row: row))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StorageError(.internal, "a row decodes into a keyed value")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw StorageError(.internal, "a row decodes into a keyed value")
    }

    struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: SQLRow
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.names.compactMap { Key(stringValue: SQLColumns.camelCase($0)) } }

        /// Every key: a missing column fails in ``decodeNil(forKey:)`` rather than reading as nil.
        func contains(_ key: Key) -> Bool { true }

        func column(_ key: Key) throws -> SQLColumnDecoder {
            SQLColumnDecoder(row: row, index: try row.position(key.stringValue), name: key.stringValue)
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = row.values[try row.position(key.stringValue)] { return true }
            return false
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

        func superDecoder() throws -> any Decoder { SQLRowDecoder(row: row) }
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
