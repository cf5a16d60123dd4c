/// JSON written as `JSONEncoder` with `.sortedKeys` writes it, byte for byte, from a tree of
/// values: the fast writers (``SortedJSONEncoder``, the server's answer writer) build the tree,
/// this writes it. Its string escaper is the one every JSON text of the project goes through
/// (log lines included), so all of them escape alike.
public enum JSONWriter {
    public indirect enum Value: Sendable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case null
        case array([Value])
        /// Members in any order: written sorted by key, as `.sortedKeys` does.
        case object([(String, Value)])
        /// A value already written as this writer would write it (a part encoded once, reused).
        case raw([UInt8])
    }

    /// Writes `value` as `JSONEncoder` with `.sortedKeys` does; `escapingSlashes` false matches
    /// `.withoutEscapingSlashes` too.
    public static func write(_ value: Value, to bytes: inout [UInt8], escapingSlashes: Bool = false) {
        switch value {
        case .string(let text): appendQuoted(text, to: &bytes, escapingSlashes: escapingSlashes)
        case .int(let number): appendInt(number, to: &bytes)
        case .double(let number): appendNumber(number, to: &bytes)
        case .bool(let flag): bytes += (flag ? "true" : "false").utf8
        case .null: bytes += "null".utf8
        case .raw(let written): bytes += written
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item, to: &bytes, escapingSlashes: escapingSlashes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let sorted = members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendQuoted(member.0, to: &bytes, escapingSlashes: escapingSlashes)
                bytes.append(UInt8(ascii: ":"))
                write(member.1, to: &bytes, escapingSlashes: escapingSlashes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends the decimal digits of `number`, as `String(number)` (and so `JSONEncoder`) writes
    /// them, without building a string.
    public static func appendInt(_ number: Int64, to bytes: inout [UInt8]) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        if magnitude < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            while magnitude > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            bytes.append(contentsOf: buffer[index...])
        }
    }

    /// Appends a finite `number` as Foundation's `JSONEncoder` writes it: `description` less a
    /// trailing ".0" (`1`, `-0`, `0.85`, `1e+16`, `1e-07`, `5e-324`); exponents are `description`'s
    /// own. Differential tests hold it to Foundation over generated and edge-case doubles.
    public static func appendNumber(_ number: Double, to bytes: inout [UInt8]) {
        let text = number.description
        bytes += (text.hasSuffix(".0") ? text.dropLast(2) : Substring(text)).utf8
    }

    /// Appends `value` as a JSON string literal (UTF-8) the way Foundation's `JSONEncoder` writes it
    /// with `.withoutEscapingSlashes`: `"` and `\` escaped, `\b \f \n \r \t` by name, other
    /// control characters as `\u00xx`, everything else as is. With `escapingSlashes`, `/` is
    /// written `\/`, as `JSONEncoder` does without that option.
    public static func appendQuoted(_ value: String, to bytes: inout [UInt8], escapingSlashes: Bool = false) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Bytes written as they are go in runs, one append each: a signed text is kilobytes
            // of base64url with nothing to escape.
            var run = 0
            for index in utf8.indices {
                let byte = utf8[index]
                // Most bytes need nothing: one test for them before the cases.
                if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte != UInt8(ascii: "/") || !escapingSlashes {
                    continue
                }
                let escaped: [UInt8]
                switch byte {
                case UInt8(ascii: "\""): escaped = [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "/") where escapingSlashes: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "/")]
                case UInt8(ascii: "\\"): escaped = [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x08: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "b")]
                case 0x0C: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "f")]
                case 0x0A: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: escaped = [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    escaped = [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                default: continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                bytes += escaped
                run = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
