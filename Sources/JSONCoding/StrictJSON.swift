import Foundation

/// Cheap structural checks and a tiny JSON reader for the JWS header.
///
/// The payload goes to `JSONDecoder`, but only after ``JSONNestingScan/nestingDepth(of:limit:)`` has bounded
/// its nesting, so hostile input (1 MB of `[`) fails fast with a typed error instead of deep recursion.
/// The header is read here rather than with Foundation because it is on the hot path and only a few
/// fields matter.
public enum JSONNestingScan {
    /// The maximum nesting depth of `bytes`, or nil as soon as it exceeds `limit`.
    ///
    /// Counts `[` and `{` outside strings; does not otherwise validate the JSON.
    public static func nestingDepth(of bytes: UnsafeRawBufferPointer, limit: Int) -> Int? {
        var depth = 0
        var deepest = 0
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                // Jump from quote to quote with memchr: payloads are mostly long strings (nested JWS).
                // A quote ends the string unless an odd run of backslashes precedes it.
                let stringStart = index
                while true {
                    guard index < count, let found = memchr(bytes.baseAddress! + index, Int32(UInt8(ascii: "\"")), count - index)
                    else {
                        index = count
                        break
                    }
                    let quote = UnsafeRawPointer(found) - bytes.baseAddress!
                    var backslashes = 0
                    while quote - backslashes - 1 >= stringStart, bytes[quote - backslashes - 1] == UInt8(ascii: "\\") {
                        backslashes += 1
                    }
                    index = quote + 1
                    if backslashes % 2 == 0 { break }
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return nil }
                if depth > deepest { deepest = depth }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// The array form of ``nestingDepth(of:limit:)``.
    public static func nestingDepth(of bytes: [UInt8], limit: Int) -> Int? {
        bytes.withUnsafeBytes { nestingDepth(of: $0, limit: limit) }
    }
}

/// A JSON value, as read by ``StrictJSONReader``.
public enum StrictJSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// Numbers keep their source text; the header never needs arithmetic.
    case number(String)
    case string(String)
    case array([StrictJSONValue])
    /// Members in source order; a duplicate key is rejected by the reader.
    case object([(String, StrictJSONValue)])

    public static func == (lhs: StrictJSONValue, rhs: StrictJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> StrictJSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }
}

/// A strict RFC 8259 reader with a depth limit, for small documents such as JWS headers.
public struct StrictJSONReader {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    private let depthLimit: Int

    /// Parses one JSON document; nil when the input is not exactly one valid value within `depthLimit`.
    public static func parse(_ bytes: UnsafeRawBufferPointer, depthLimit: Int = 16) -> StrictJSONValue? {
        var reader = StrictJSONReader(bytes: bytes, depthLimit: depthLimit)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipWhitespace()
        return reader.position == bytes.count ? value : nil
    }

    /// The array form of ``parse(_:depthLimit:)``.
    public static func parse(_ bytes: [UInt8], depthLimit: Int = 16) -> StrictJSONValue? {
        bytes.withUnsafeBytes { parse($0, depthLimit: depthLimit) }
    }

    private init(bytes: UnsafeRawBufferPointer, depthLimit: Int) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] { return false }
        position += count
        return true
    }

    private mutating func value(depth: Int) -> StrictJSONValue? {
        skipWhitespace()
        guard let byte = current else { return nil }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < depthLimit else { return nil }
            position += 1
            var members: [(String, StrictJSONValue)] = []
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), let key = string() else { return nil }
                // Duplicate names make the header ambiguous (which `alg` counts?), so refuse them.
                if members.contains(where: { $0.0 == key }) { return nil }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return nil }
                position += 1
                guard let member = value(depth: depth + 1) else { return nil }
                members.append((key, member))
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard current == UInt8(ascii: "}") else { return nil }
                position += 1
                return .object(members)
            }
        case UInt8(ascii: "["):
            guard depth < depthLimit else { return nil }
            position += 1
            var elements: [StrictJSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                guard let element = value(depth: depth + 1) else { return nil }
                elements.append(element)
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard current == UInt8(ascii: "]") else { return nil }
                position += 1
                return .array(elements)
            }
        case UInt8(ascii: "\""):
            return string().map(StrictJSONValue.string)
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default: return number()
        }
    }

    private mutating func number() -> StrictJSONValue? {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, first >= 0x30, first <= 0x39 else { return nil }
        position += 1
        if first != 0x30 { while let d = current, d >= 0x30, d <= 0x39 { position += 1 } }
        if current == UInt8(ascii: ".") {
            position += 1
            guard let d = current, d >= 0x30, d <= 0x39 else { return nil }
            while let d = current, d >= 0x30, d <= 0x39 { position += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let d = current, d >= 0x30, d <= 0x39 else { return nil }
            while let d = current, d >= 0x30, d <= 0x39 { position += 1 }
        }
        return .number(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
    }

    /// Reads a string starting at the opening quote.
    private mutating func string() -> String? {
        position += 1
        let start = position
        // Fast path: no escapes, which is every header Apple emits.
        while let byte = current {
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                position += 1
                return String(validating: raw, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            position += 1
        }
        guard current == UInt8(ascii: "\\") else { return nil }
        var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while let byte = current {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escape = current else { return nil }
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        return nil
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: return nil
                }
            default:
                if byte < 0x20 { return nil }
                out.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
