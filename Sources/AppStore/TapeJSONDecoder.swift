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
    static func decodeKeepingTape<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> (value: T, tape: JSONTape)? {
        guard let tape = JSONTape(parsing: bytes) else { return nil }
        let decoder = TapeDecoder(tape: tape)
        guard let value = try? decoder.value(T.self, at: 0), !decoder.bailed else { return nil }
        return (value, tape)
    }
}

/// A parsed JSON document: one node per value (and per object key), in document order.
struct JSONTape {
    enum Kind: UInt8 {
        case null, `true`, `false`, number, string, array, object
    }

    struct Node {
        var kind: Kind
        /// Strings: the text has escapes (1) or non-ASCII bytes (2). Numbers: 1 if an integer.
        var flags: UInt8
        /// Strings and numbers: the byte range of the text (without quotes). Containers: `start`
        /// is the member count, `end` the index of the first node after the container.
        var start: Int32
        var end: Int32
    }

    let bytes: [UInt8]
    private(set) var nodes: [Node] = []

    static let depthLimit = 64

    /// Nil when the bytes are not one strict JSON value, are nested deeper than ``depthLimit``, or
    /// hold an object with a duplicate, escaped or non-ASCII key (Foundation decides those).
    init?(parsing bytes: [UInt8]) {
        guard bytes.count < Int(Int32.max) else { return nil }
        self.bytes = bytes
        nodes.reserveCapacity(64)
        var parser = Parser(count: bytes.count)
        let ok = bytes.withUnsafeBufferPointer { buffer in
            parser.run(buffer, into: &nodes)
        }
        guard ok else { return nil }
    }

    private struct Parser {
        let count: Int
        var position = 0
        /// Start offsets of the keys of the objects being parsed (a stack shared by the nesting).
        var keys: [Int32] = []

        init(count: Int) { self.count = count }

        mutating func run(_ bytes: UnsafeBufferPointer<UInt8>, into nodes: inout [Node]) -> Bool {
            guard value(bytes, &nodes, depth: 0) else { return false }
            skipWhitespace(bytes)
            return position == count
        }

        mutating func skipWhitespace(_ bytes: UnsafeBufferPointer<UInt8>) {
            while position < count {
                let byte = bytes[position]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
                position += 1
            }
        }

        mutating func value(_ bytes: UnsafeBufferPointer<UInt8>, _ nodes: inout [Node], depth: Int) -> Bool {
            skipWhitespace(bytes)
            guard position < count else { return false }
            switch bytes[position] {
            case UInt8(ascii: "{"): return object(bytes, &nodes, depth: depth)
            case UInt8(ascii: "["): return array(bytes, &nodes, depth: depth)
            case UInt8(ascii: "\""): return string(bytes, &nodes)
            case UInt8(ascii: "t"): return literal(bytes, "true", .true, &nodes)
            case UInt8(ascii: "f"): return literal(bytes, "false", .false, &nodes)
            case UInt8(ascii: "n"): return literal(bytes, "null", .null, &nodes)
            default: return number(bytes, &nodes)
            }
        }

        mutating func literal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString, _ kind: Kind, _ nodes: inout [Node]) -> Bool {
            let length = text.utf8CodeUnitCount
            guard count - position >= length else { return false }
            for index in 0..<length where bytes[position + index] != text.utf8Start[index] { return false }
            nodes.append(Node(kind: kind, flags: 0, start: Int32(position), end: Int32(position + length)))
            position += length
            return true
        }

        mutating func object(_ bytes: UnsafeBufferPointer<UInt8>, _ nodes: inout [Node], depth: Int) -> Bool {
            guard depth < JSONTape.depthLimit else { return false }
            let index = nodes.count
            nodes.append(Node(kind: .object, flags: 0, start: 0, end: 0))
            position += 1
            let keyBase = keys.count
            defer { keys.removeSubrange(keyBase...) }
            var members: Int32 = 0
            skipWhitespace(bytes)
            if position < count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                nodes[index].end = Int32(nodes.count)
                return true
            }
            while true {
                skipWhitespace(bytes)
                guard position < count, bytes[position] == UInt8(ascii: "\""), string(bytes, &nodes) else { return false }
                let key = nodes[nodes.count - 1]
                // Foundation compares keys as Strings (canonical equivalence) and has its own rule
                // for duplicates; plain unique ASCII keys are where byte equality is the same answer.
                guard key.flags == 0 else { return false }
                for other in keys[keyBase...] {
                    let otherEnd = Int(other) + Int(key.end - key.start)
                    if otherEnd < count, bytes[otherEnd] == UInt8(ascii: "\""),
                        memcmp(bytes.baseAddress! + Int(other), bytes.baseAddress! + Int(key.start), Int(key.end - key.start)) == 0
                    {
                        return false
                    }
                }
                keys.append(key.start)
                skipWhitespace(bytes)
                guard position < count, bytes[position] == UInt8(ascii: ":") else { return false }
                position += 1
                guard value(bytes, &nodes, depth: depth + 1) else { return false }
                members += 1
                skipWhitespace(bytes)
                guard position < count else { return false }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { return false }
                position += 1
                nodes[index].start = members
                nodes[index].end = Int32(nodes.count)
                return true
            }
        }

        mutating func array(_ bytes: UnsafeBufferPointer<UInt8>, _ nodes: inout [Node], depth: Int) -> Bool {
            guard depth < JSONTape.depthLimit else { return false }
            let index = nodes.count
            nodes.append(Node(kind: .array, flags: 0, start: 0, end: 0))
            position += 1
            var elements: Int32 = 0
            skipWhitespace(bytes)
            if position < count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                nodes[index].end = Int32(nodes.count)
                return true
            }
            while true {
                guard value(bytes, &nodes, depth: depth + 1) else { return false }
                elements += 1
                skipWhitespace(bytes)
                guard position < count else { return false }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "]") else { return false }
                position += 1
                nodes[index].start = elements
                nodes[index].end = Int32(nodes.count)
                return true
            }
        }

        /// A string from its opening quote. Eight bytes at a time while they are plain printable
        /// ASCII other than `"` and `\` (payloads are mostly long base64 strings).
        mutating func string(_ bytes: UnsafeBufferPointer<UInt8>, _ nodes: inout [Node]) -> Bool {
            position += 1
            let start = position
            var flags: UInt8 = 0
            let base = UnsafeRawPointer(bytes.baseAddress!)
            while count - position >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                if Self.isPlain(word) {
                    position += 8
                } else {
                    break
                }
            }
            while position < count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    nodes.append(Node(kind: .string, flags: flags, start: Int32(start), end: Int32(position)))
                    position += 1
                    return true
                case UInt8(ascii: "\\"):
                    flags |= 1
                    position += 1
                    guard position < count else { return false }
                    switch bytes[position] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        position += 1
                    case UInt8(ascii: "u"):
                        guard count - position >= 5 else { return false }
                        for offset in 1...4 where !Self.isHexDigit(bytes[position + offset]) { return false }
                        position += 5
                    default:
                        return false
                    }
                case 0..<0x20:
                    return false
                case 0x80...:
                    flags |= 2
                    position += 1
                default:
                    position += 1
                }
            }
            return false
        }

        /// True when no byte of `word` is a control character, `"`, `\` or above 0x7F.
        static func isPlain(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            func hasZero(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
            let control = (word &- ones &* 0x20) & ~word & highs
            let special = hasZero(word ^ (ones &* 0x22)) | hasZero(word ^ (ones &* 0x5C)) | control | (word & highs)
            return special == 0
        }

        static func isHexDigit(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
        }

        mutating func number(_ bytes: UnsafeBufferPointer<UInt8>, _ nodes: inout [Node]) -> Bool {
            let start = position
            var integer: UInt8 = 1
            func digit(_ at: Int) -> Bool { at < count && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
            if position < count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard digit(position) else { return false }
            if bytes[position] == 0x30 {
                position += 1
            } else {
                while digit(position) { position += 1 }
            }
            if position < count, bytes[position] == UInt8(ascii: ".") {
                integer = 0
                position += 1
                guard digit(position) else { return false }
                while digit(position) { position += 1 }
            }
            if position < count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                integer = 0
                position += 1
                if position < count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digit(position) else { return false }
                while digit(position) { position += 1 }
            }
            nodes.append(Node(kind: .number, flags: integer, start: Int32(start), end: Int32(position)))
            return true
        }
    }

    /// The index of the node after `index` and everything inside it.
    @inline(__always)
    func after(_ index: Int) -> Int {
        let node = nodes[index]
        return node.kind == .array || node.kind == .object ? Int(node.end) : index + 1
    }

    /// The value node of member `key` of the object at `object`, searching from member node
    /// `hint` first (synthesized decoders ask in declaration order, which is usually the
    /// document's); nil when absent. `hint` is left after the member found.
    func member(_ key: String, of object: Int, hint: inout Int) -> Int? {
        var key = key
        return key.withUTF8 { wanted -> Int? in
            let end = Int(nodes[object].end)
            let length = wanted.count
            return bytes.withUnsafeBufferPointer { buffer -> Int? in
                func matches(_ keyNode: Int) -> Bool {
                    let node = nodes[keyNode]
                    return Int(node.end - node.start) == length
                        && (length == 0 || memcmp(buffer.baseAddress! + Int(node.start), wanted.baseAddress!, length) == 0)
                }
                var index = hint > object && hint < end ? hint : object + 1
                let first = index
                // From the hint to the end, then from the start up to the hint.
                while index < end {
                    let valueIndex = index + 1
                    if matches(index) {
                        hint = after(valueIndex)
                        return valueIndex
                    }
                    index = after(valueIndex)
                }
                index = object + 1
                while index < first {
                    let valueIndex = index + 1
                    if matches(index) {
                        hint = after(valueIndex)
                        return valueIndex
                    }
                    index = after(valueIndex)
                }
                return nil
            }
        }
    }

    /// The text of the string node at `index`, unescaped; nil for invalid UTF-8 or a lone surrogate.
    func string(at index: Int) -> String? {
        let node = nodes[index]
        return bytes.withUnsafeBufferPointer { buffer -> String? in
            let text = UnsafeBufferPointer(rebasing: buffer[Int(node.start)..<Int(node.end)])
            if node.flags == 0 { return String(decoding: text, as: UTF8.self) }
            if node.flags & 1 == 0 { return String(validating: text, as: UTF8.self) }
            // Escapes are rare in payloads: the header reader's string rules, quotes included.
            let quoted = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[(Int(node.start) - 1)...Int(node.end)]))
            guard case .string(let unescaped)? = StrictJSONReader.parse(quoted) else { return nil }
            return unescaped
        }
    }

    /// The integer at number node `index` when it is one and fits in `Int64`.
    func int64(at index: Int) -> Int64? {
        let node = nodes[index]
        guard node.kind == .number, node.flags == 1 else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> Int64? in
            let text = buffer[Int(node.start)..<Int(node.end)]
            let negative = text.first == UInt8(ascii: "-")
            return Self.integer(text.dropFirst(negative ? 1 : 0), negative: negative)
        }
    }

    /// Epoch milliseconds at number node `index`, floored, as ``EpochMilliseconds`` reads them;
    /// nil for exponents, out-of-range values and fractions longer than `Decimal` keeps exactly
    /// (38 digits): those take the `Decimal` path, and so Foundation's.
    func flooredMilliseconds(at index: Int) -> Int64? {
        let node = nodes[index]
        guard node.kind == .number else { return nil }
        if node.flags == 1 { return int64(at: index) }
        guard node.end - node.start <= 32 else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> Int64? in
            let text = buffer[Int(node.start)..<Int(node.end)]
            guard let dot = text.firstIndex(of: UInt8(ascii: ".")),
                !text.contains(UInt8(ascii: "e")), !text.contains(UInt8(ascii: "E"))
            else { return nil }
            let negative = text.first == UInt8(ascii: "-")
            guard let whole = Self.integer(text[..<dot].dropFirst(negative ? 1 : 0), negative: negative) else { return nil }
            // Flooring a negative value with a non-zero fraction goes one further down.
            guard negative, text[(dot + 1)...].contains(where: { $0 != 0x30 }) else { return whole }
            let (result, overflow) = whole.subtractingReportingOverflow(1)
            return overflow ? nil : result
        }
    }

    /// The value of validated decimal `digits` with the sign applied; nil beyond `Int64`.
    private static func integer(_ digits: Slice<UnsafeBufferPointer<UInt8>>, negative: Bool) -> Int64? {
        // Accumulate negatively so that Int64.min fits.
        var value: Int64 = 0
        for byte in digits {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = shifted.subtractingReportingOverflow(Int64(byte &- 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }
}

/// Walks a ``JSONTape`` for `Decodable` types. Any failure sets ``bailed``: the caller then asks
/// Foundation, even when a model swallowed the error with `try?`.
final class TapeDecoder: Decoder {
    let tape: JSONTape
    /// The node being decoded by the current `init(from:)`.
    var current = 0
    var bailed = false

    init(tape: JSONTape) { self.tape = tape }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    struct Bailout: Error {}

    func bail() -> Bailout {
        bailed = true
        return Bailout()
    }

    func node(_ index: Int) -> JSONTape.Node { tape.nodes[index] }

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

    func string(at index: Int) throws -> String {
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

    /// ``RawJSON`` straight from the tape, as its `init(from:)` reads it from Foundation (whose
    /// `try?` chain would otherwise always end here in a bail-out). Fractions and integers beyond
    /// `Int64` are left to Foundation's number parsing.
    func rawJSON(at index: Int) throws -> RawJSON {
        switch node(index).kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .number:
            guard let value = tape.int64(at: index) else { throw bail() }
            return .integer(value)
        case .string: return .string(try string(at: index))
        case .array:
            var elements: [RawJSON] = []
            let end = Int(node(index).end)
            var element = index + 1
            while element < end {
                elements.append(try rawJSON(at: element))
                element = tape.after(element)
            }
            return .array(elements)
        case .object:
            var members: [String: RawJSON] = [:]
            let end = Int(node(index).end)
            var key = index + 1
            while key < end {
                members[try string(at: key)] = try rawJSON(at: key + 1)
                key = tape.after(key + 1)
            }
            return .object(members)
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node(current).kind == .object else { throw bail() }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, object: current))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard node(current).kind == .array else { throw bail() }
        return UnkeyedContainer(decoder: self, array: current)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
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
