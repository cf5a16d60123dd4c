import Foundation

/// A `Decodable` reader for the JSON of signed payloads, several times faster than `JSONDecoder`,
/// with `JSONDecoder`'s results.
///
/// Every notification carries three payloads to decode, and Foundation's decoder cost half as much
/// CPU as their three ES256 checks. This one parses the bytes once into a flat tape and walks it
/// with `Codable`, so the models' own `init(from:)` still decide what a payload means.
///
/// It only takes the path where its answer cannot differ from Foundation's: strict RFC 8259
/// input, plain-ASCII unique keys, integers without fraction or exponent, no `Data`, `Date`,
/// `URL`, `Decimal` or floating-point fields. Anything else — including every error, even one a
/// model catches with `try?` — hands the whole document to `JSONDecoder`, so errors and edge cases
/// are exactly Foundation's.
public enum TapeJSONDecoder {
    /// Decodes `type` from `bytes`; on anything unusual, with `JSONDecoder` (whose errors it throws).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], fallback: JSONDecoder) throws -> T {
        if let value = decodeWithoutFallback(type, from: bytes) { return value }
        return try fallback.decode(type, from: Data(bytes))
    }

    /// The fast path alone: the value, or nil where ``decode(_:from:fallback:)`` would ask Foundation.
    public static func decodeWithoutFallback<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        decodeKeepingTape(type, from: bytes)?.value
    }

    /// The fast path alone, with the parsed document (for what the model did not read).
    package static func decodeKeepingTape<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> (value: T, tape: JSONTape)? {
        guard let tape = JSONTape(parsing: bytes) else { return nil }
        let decoder = TapeDecoder(tape: tape)
        guard let value = try? decoder.value(T.self, at: 0), !decoder.bailed else { return nil }
        return (value, tape)
    }
}

/// Walks a ``JSONTape`` for `Decodable` types. Any failure sets ``bailed``: the caller then asks
/// Foundation, even when a model swallowed the error with `try?`.
package final class TapeDecoder: Decoder {
    package let tape: JSONTape
    /// The node being decoded by the current `init(from:)`.
    package var current = 0
    var bailed = false

    package init(tape: JSONTape) { self.tape = tape }

    package var codingPath: [any CodingKey] { [] }
    package var userInfo: [CodingUserInfoKey: Any] { [:] }

    package struct Bailout: Error {}

    package func bail() -> Bailout {
        bailed = true
        return Bailout()
    }

    package func node(_ index: Int) -> JSONTape.Node { tape.nodes[index] }

    func value<T: Decodable>(_ type: T.Type, at index: Int) throws -> T {
        // The scalar types first, without an init(from:) round trip.
        if T.self == String.self { return try string(at: index) as! T }
        if T.self == Int64.self { return try integer(Int64.self, at: index) as! T }
        if T.self == Int.self { return try integer(Int.self, at: index) as! T }
        if T.self == Bool.self { return try bool(at: index) as! T }
        if T.self == Int32.self { return try integer(Int32.self, at: index) as! T }
        // Foundation gives these its own strategies (base64, dates, URLs, exact decimals) or its
        // own number parsing; leave them to it.
        if T.self == Data.self || T.self == Date.self || T.self == URL.self || T.self == Decimal.self
            || T.self == Double.self || T.self == Float.self
        {
            throw bail()
        }
        let saved = current
        current = index
        defer { current = saved }
        return try T(from: self)
    }

    package func string(at index: Int) throws -> String {
        guard node(index).kind == .string, let text = tape.string(at: index) else { throw bail() }
        return text
    }

    func bool(at index: Int) throws -> Bool {
        switch node(index).kind {
        case .true: return true
        case .false: return false
        default: throw bail()
        }
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type, at index: Int) throws -> I {
        guard let value = tape.int64(at: index), let exact = I(exactly: value) else { throw bail() }
        // Foundation's handling of "-0" for unsigned types is its own business.
        if !I.isSigned, value == 0, tape.bytes[Int(node(index).start)] == UInt8(ascii: "-") { throw bail() }
        return exact
    }

    package func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node(current).kind == .object else { throw bail() }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, object: current))
    }

    package func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard node(current).kind == .array else { throw bail() }
        return UnkeyedContainer(decoder: self, array: current)
    }

    package func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self, index: current)
    }

    /// A cursor into an object's members; a class so that the non-mutating lookups can move it.
    final class Hint {
        var next = 0
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: TapeDecoder
        let object: Int
        let hint = Hint()

        var codingPath: [any CodingKey] { [] }

        var allKeys: [Key] {
            var keys: [Key] = []
            let end = Int(decoder.node(object).end)
            var index = object + 1
            while index < end {
                if let name = decoder.tape.string(at: index), let key = Key(stringValue: name) { keys.append(key) }
                index = decoder.tape.after(index + 1)
            }
            return keys
        }

        func find(_ key: Key) -> Int? { decoder.tape.member(key.stringValue, of: object, hint: &hint.next) }

        func required(_ key: Key) throws -> Int {
            guard let index = find(key) else { throw decoder.bail() }
            return index
        }

        /// The member's node unless it is absent or null.
        func present(_ key: Key) -> Int? {
            guard let index = find(key), decoder.node(index).kind != .null else { return nil }
            return index
        }

        func contains(_ key: Key) -> Bool { find(key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool { decoder.node(try required(key)).kind == .null }

        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.string(at: required(key)) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.bool(at: required(key)) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder.integer(type, at: required(key)) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder.integer(type, at: required(key)) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.value(type, at: required(key)) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder.integer(type, at: required(key)) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder.integer(type, at: required(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { throw decoder.bail() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw decoder.bail() }

        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            try present(key).map { try decoder.string(at: $0) }
        }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            try present(key).map { try decoder.bool(at: $0) }
        }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            try present(key).map { try decoder.integer(type, at: $0) }
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            try present(key).map { try decoder.integer(type, at: $0) }
        }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
            try present(key).map { try decoder.integer(type, at: $0) }
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            try present(key).map { try decoder.value(type, at: $0) }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let index = try required(key)
            guard decoder.node(index).kind == .object else { throw decoder.bail() }
            return KeyedDecodingContainer(KeyedContainer<NestedKey>(decoder: decoder, object: index))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let index = try required(key)
            guard decoder.node(index).kind == .array else { throw decoder.bail() }
            return UnkeyedContainer(decoder: decoder, array: index)
        }

        func superDecoder() throws -> any Decoder { throw decoder.bail() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw decoder.bail() }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let decoder: TapeDecoder
        let end: Int
        var next: Int
        let count: Int?
        var currentIndex = 0

        init(decoder: TapeDecoder, array: Int) {
            self.decoder = decoder
            let node = decoder.node(array)
            end = Int(node.end)
            next = array + 1
            count = Int(node.start)
        }

        var codingPath: [any CodingKey] { [] }
        var isAtEnd: Bool { next >= end }

        mutating func element() throws -> Int {
            guard next < end else { throw decoder.bail() }
            let index = next
            next = decoder.tape.after(index)
            currentIndex += 1
            return index
        }

        mutating func decodeNil() throws -> Bool {
            guard next < end else { throw decoder.bail() }
            guard decoder.node(next).kind == .null else { return false }
            _ = try element()
            return true
        }

        mutating func decode(_ type: String.Type) throws -> String { try decoder.string(at: element()) }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(at: element()) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type, at: element()) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.value(type, at: element()) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type, at: element()) }
        mutating func decode(_ type: Double.Type) throws -> Double { throw decoder.bail() }
        mutating func decode(_ type: Float.Type) throws -> Float { throw decoder.bail() }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let index = try element()
            guard decoder.node(index).kind == .object else { throw decoder.bail() }
            return KeyedDecodingContainer(KeyedContainer<NestedKey>(decoder: decoder, object: index))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let index = try element()
            guard decoder.node(index).kind == .array else { throw decoder.bail() }
            return UnkeyedContainer(decoder: decoder, array: index)
        }

        mutating func superDecoder() throws -> any Decoder { throw decoder.bail() }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: TapeDecoder
        let index: Int

        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { decoder.node(index).kind == .null }
        func decode(_ type: String.Type) throws -> String { try decoder.string(at: index) }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(at: index) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type, at: index) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type, at: index) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type, at: index) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.value(type, at: index) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type, at: index) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type, at: index) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type, at: index) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type, at: index) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type, at: index) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type, at: index) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type, at: index) }
        func decode(_ type: Double.Type) throws -> Double { throw decoder.bail() }
        func decode(_ type: Float.Type) throws -> Float { throw decoder.bail() }

        /// ``EpochMilliseconds`` without its `Decimal` detour: nil means "take that detour".
        func flooredMilliseconds() -> Int64? { decoder.tape.flooredMilliseconds(at: index) }
    }
}
