import Foundation

/// A strict JSON (RFC 8259) syntax check that says where the first mistake is, by line and
/// column, so that a broken configuration file can be fixed without guessing. Refuses what
/// lenient parsers accept: trailing commas, comments, single quotes, bare words, control
/// characters in strings, more than one value. Checks syntax only (values are read afterwards).
enum JSONSyntax {
    /// A syntax error: 1-based line and column (in characters) and what was expected.
    struct Mistake: Error, Equatable, CustomStringConvertible {
        var line: Int
        var column: Int
        var message: String
        var description: String { "line \(line), column \(column): \(message)" }
    }

    /// Nested arrays and objects deeper than this are refused (the configuration has a handful).
    static let depthLimit = 64

    /// The first mistake in `bytes`, or nil when they are one JSON value.
    static func firstMistake(in bytes: [UInt8]) -> Mistake? {
        var scanner = Scanner(bytes: bytes)
        do throws(Mistake) {
            scanner.skipSpace()
            try scanner.value(depth: 0)
            scanner.skipSpace()
            guard scanner.index == bytes.count else { throw scanner.mistake("unexpected text after the end of the JSON value") }
            return nil
        } catch {
            return error
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        /// A mistake at the current position.
        func mistake(_ message: String) -> Mistake {
            var line = 1
            var column = 1
            for byte in bytes[..<min(index, bytes.count)] {
                if byte == 0x0A {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    // Continuation bytes of UTF-8 are part of the character before them.
                    column += 1
                }
            }
            return Mistake(line: line, column: column, message: message)
        }

        /// What stands at the current position, for messages.
        func found() -> String {
            guard let byte = current else { return "the end of the file" }
            if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
            return "byte 0x\(String(byte, radix: 16))"
        }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) throws(Mistake) {
            guard depth < JSONSyntax.depthLimit else { throw mistake("nested deeper than \(JSONSyntax.depthLimit) levels") }
            guard let byte = current else { throw mistake("expected a value, found the end of the file") }
            switch byte {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            case UInt8(ascii: "t"): try word("true")
            case UInt8(ascii: "f"): try word("false")
            case UInt8(ascii: "n"): try word("null")
            case UInt8(ascii: "/"): throw mistake("comments are not JSON (a key named \"//\" holds documentation)")
            case UInt8(ascii: "'"): throw mistake("strings take double quotes")
            default: throw mistake("expected a value, found \(found())")
            }
        }

        mutating func object(depth: Int) throws(Mistake) {
            try container(closing: UInt8(ascii: "}"), depth: depth) { (scanner: inout Scanner) throws(Mistake) in
                guard scanner.current == UInt8(ascii: "\"") else {
                    throw scanner.mistake("expected a key in double quotes, found \(scanner.found())")
                }
                try scanner.string()
                scanner.skipSpace()
                guard scanner.current == UInt8(ascii: ":") else { throw scanner.mistake("expected ':' after the key, found \(scanner.found())") }
                scanner.index += 1
                scanner.skipSpace()
                try scanner.value(depth: depth)
            }
        }

        mutating func array(depth: Int) throws(Mistake) {
            try container(closing: UInt8(ascii: "]"), depth: depth) { (scanner: inout Scanner) throws(Mistake) in
                try scanner.value(depth: depth)
            }
        }

        /// An object or an array: `element` read between commas up to `closing`, no trailing comma.
        mutating func container(
            closing: UInt8, depth: Int, _ element: (inout Scanner) throws(Mistake) -> Void
        ) throws(Mistake) {
            let name = "'\(Character(Unicode.Scalar(closing)))'"
            index += 1
            skipSpace()
            if current == closing {
                index += 1
                return
            }
            while true {
                if current == closing { throw mistake("a trailing comma before \(name) is not JSON") }
                try element(&self)
                skipSpace()
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                    skipSpace()
                case closing:
                    index += 1
                    return
                default: throw mistake("expected ',' or \(name), found \(found())")
                }
            }
        }

        mutating func string() throws(Mistake) {
            index += 1
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current else { break }
                    if escaped == UInt8(ascii: "u") {
                        for _ in 0..<4 {
                            index += 1
                            guard let hex = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(hex)
                                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(hex | 0x20)
                            else { throw mistake("expected four hexadecimal digits after \\u") }
                        }
                    } else if !Array(#""\/bfnrt"#.utf8).contains(escaped) {
                        throw mistake("unknown escape '\\\(Character(Unicode.Scalar(escaped)))'")
                    }
                    index += 1
                case 0..<0x20:
                    throw mistake(byte == 0x0A ? "a string does not end on its line (missing '\"'?)" : "a control character in a string")
                default:
                    index += 1
                }
            }
            throw mistake("a string does not end (missing '\"')")
        }

        mutating func number() throws(Mistake) {
            if current == UInt8(ascii: "-") { index += 1 }
            let leadingZero = current == UInt8(ascii: "0")
            let count = digits()
            guard count > 0 else { throw mistake("expected a digit, found \(found())") }
            if leadingZero && count > 1 {
                index -= count - 1
                throw mistake("a number does not start with 0")
            }
            if current == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw mistake("expected a digit after '.', found \(found())") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw mistake("expected a digit in the exponent, found \(found())") }
            }
        }

        mutating func digits() -> Int {
            let start = index
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index - start
        }

        mutating func word(_ word: String) throws(Mistake) {
            for expected in word.utf8 {
                guard current == expected else { throw mistake("expected \(word), found \(found())") }
                index += 1
            }
        }
    }
}
