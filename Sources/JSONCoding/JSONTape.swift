// The parse half of the fast JSON reader (``TapeJSONDecoder``): bytes to a flat tape of nodes.

import Foundation

/// A parsed JSON document: one node per value (and per object key), in document order.
package struct JSONTape {
    package enum Kind: UInt8 {
        case null, `true`, `false`, number, string, array, object
    }

    package struct Node {
        package var kind: Kind
        /// Strings: the text has escapes (1) or non-ASCII bytes (2). Numbers: 1 if an integer.
        package var flags: UInt8
        /// Strings and numbers: the byte range of the text (without quotes). Containers: `start`
        /// is the member count, `end` the index of the first node after the container.
        package var start: Int32
        package var end: Int32
    }

    package let bytes: [UInt8]
    package private(set) var nodes: [Node] = []

    static let depthLimit = 64

    /// Nil when the bytes are not one strict JSON value, are nested deeper than ``depthLimit``, or
    /// hold an object with a duplicate, escaped or non-ASCII key (Foundation decides those).
    package init?(parsing bytes: [UInt8]) {
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
    package func after(_ index: Int) -> Int {
        let node = nodes[index]
        return node.kind == .array || node.kind == .object ? Int(node.end) : index + 1
    }

    /// The value node of member `key` of the object at `object`, searching from member node
    /// `hint` first (synthesized decoders ask in declaration order, which is usually the
    /// document's); nil when absent. `hint` is left after the member found.
    package func member(_ key: String, of object: Int, hint: inout Int) -> Int? {
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
    package func string(at index: Int) -> String? {
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
    package func int64(at index: Int) -> Int64? {
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
    package func flooredMilliseconds(at index: Int) -> Int64? {
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
