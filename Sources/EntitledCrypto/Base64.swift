/// Base64 (RFC 4648 §4) and base64url (§5) without Foundation, table-driven because the verifier
/// decodes several kilobytes of certificates and payload per token on its hot path.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0xFF marks a byte outside the alphabet.
    private static let standardTable: [UInt8] = table(for: standardAlphabet)
    private static let urlTable: [UInt8] = table(for: urlAlphabet)

    private static func table(for alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }

    /// Encodes with the standard alphabet and `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), alphabet: standardAlphabet, pad: true)
    }

    /// Encodes with the URL-safe alphabet and no padding (JWS segments).
    public static func urlEncode(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), alphabet: urlAlphabet, pad: false)
    }

    /// Decodes standard base64; padding is optional, whitespace and any other byte are rejected.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(utf8: UnsafeRawBufferPointer($0), url: false) }
    }

    /// Decodes base64url without padding (a trailing `=` is tolerated, as some encoders add it).
    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(utf8: UnsafeRawBufferPointer($0), url: true) }
    }

    /// Decodes from raw UTF-8 bytes, the form the JWS splitter hands over without building strings.
    public static func decode(utf8 input: UnsafeRawBufferPointer, url: Bool) -> [UInt8]? {
        var count = input.count
        // Strip up to two `=`; after that the length must not leave a single dangling character.
        var padding = 0
        while count > 0, input[count - 1] == UInt8(ascii: "="), padding < 2 {
            count -= 1
            padding += 1
        }
        if padding > 0, (count + padding) % 4 != 0 { return nil }
        if count % 4 == 1 { return nil }
        let table = url ? urlTable : standardTable
        let fullGroups = count / 4
        let rest = count - fullGroups * 4
        let outputCount = fullGroups * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        // Writes straight into uninitialized storage: this runs over every certificate and payload
        // on the verifier's hot path, where per-byte appends were measurable.
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            table.withUnsafeBufferPointer { table in
                var source = 0
                var target = 0
                for _ in 0..<fullGroups {
                    let a = table[Int(input[source])], b = table[Int(input[source + 1])]
                    let c = table[Int(input[source + 2])], d = table[Int(input[source + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    buffer[target] = a << 2 | b >> 4
                    buffer[target + 1] = b << 4 | c >> 2
                    buffer[target + 2] = c << 6 | d
                    source += 4
                    target += 3
                }
                if rest == 2 {
                    let a = table[Int(input[source])], b = table[Int(input[source + 1])]
                    // Unused trailing bits must be zero, so that each byte string has exactly one encoding.
                    if (a | b) & 0xC0 != 0 || b & 0x0F != 0 {
                        valid = false
                        return
                    }
                    buffer[target] = a << 2 | b >> 4
                } else if rest == 3 {
                    let a = table[Int(input[source])], b = table[Int(input[source + 1])]
                    let c = table[Int(input[source + 2])]
                    if (a | b | c) & 0xC0 != 0 || c & 0x03 != 0 {
                        valid = false
                        return
                    }
                    buffer[target] = a << 2 | b >> 4
                    buffer[target + 1] = b << 4 | c >> 2
                }
            }
            // Bytes are only read back when every group was valid, so claiming them all is safe;
            // on failure the partially written array is discarded.
            initialized = valid ? outputCount : 0
        }
        return valid ? output : nil
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if pad { out.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")]) }
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
