internal import COpenSSL
import Foundation

/// SHA-256 digests.
public enum SHA256 {
    /// The SHA-256 digest of `bytes` (32 bytes).
    public static func hash(_ bytes: some ContiguousBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                // The one-shot SHA256() looks the algorithm up in the provider on every call (a
                // lock and a property query, more than hashing a short API key costs): the digest
                // fetched once is passed instead. Neither fails for in-memory input.
                let digest = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let data = input.baseAddress ?? UnsafeRawPointer(digest)
                if let md = fetchedSHA256, EVP_Digest(data, input.count, digest, nil, md, nil) == 1 { return }
                _ = COpenSSL.SHA256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, digest)
            }
        }
        return out
    }

    /// The SHA-256 digest of several byte strings concatenated, without building the concatenation.
    public static func hash(concatenating parts: [[UInt8]]) -> [UInt8] {
        var total: [UInt8] = []
        total.reserveCapacity(parts.reduce(0) { $0 + $1.count })
        for part in parts { total.append(contentsOf: part) }
        return hash(total)
    }

    /// Colon-separated uppercase hex, the form certificate fingerprints are usually written in.
    public static func fingerprint(_ bytes: some ContiguousBytes) -> String {
        Hex.encode(hash(bytes), uppercase: true, separator: ":")
    }
}

/// HMAC with SHA-256.
public enum HMACSHA256 {
    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func authenticationCode(for message: some ContiguousBytes, key: some ContiguousBytes) throws(CryptoError)
        -> [UInt8]
    {
        var out = [UInt8](repeating: 0, count: 32)
        var outLength: UInt32 = 0
        // OpenSSL wants a non-null key pointer even for the (legal) empty key, so copy into a buffer
        // that always has at least one byte and pass the real length.
        var keyCopy = key.withUnsafeBytes { Array($0) }
        let keyLength = Int32(keyCopy.count)
        if keyCopy.isEmpty { keyCopy.append(0) }
        let ok: Bool = message.withUnsafeBytes { messageBytes in
            out.withUnsafeMutableBytes { output in
                HMAC(
                    EVP_sha256(), keyCopy, keyLength,
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self), &outLength) != nil
            }
        }
        guard ok, outLength == 32 else { throw CryptoError(.openSSL, "HMAC failed\(OpenSSL.drainErrors())") }
        return out
    }
}

/// Comparison whose running time does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when `a` and `b` hold the same bytes. Lengths are not secret: unequal lengths return at once.
    public static func equals(_ a: some ContiguousBytes, _ b: some ContiguousBytes) -> Bool {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                guard x.count == y.count else { return false }
                var difference: UInt8 = 0
                for index in 0..<x.count { difference |= x[index] ^ y[index] }
                return difference == 0
            }
        }
    }
}

/// Hexadecimal text of bytes: the one encoder (digests as keys and in logs, fingerprints,
/// PostgreSQL's `bytea` text) and its decoder.
public enum Hex {
    private static let lower = Array("0123456789abcdef".utf8)
    private static let upper = Array("0123456789ABCDEF".utf8)

    /// Two hex digits per byte, lower-case unless `uppercase`, with `separator` between bytes.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false, separator: String = "") -> String {
        let digits = uppercase ? upper : lower
        let separator = Array(separator.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * (2 + separator.count))
        for byte in bytes {
            if !out.isEmpty { out += separator }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of hex text without separators, either case; nil for an odd length or a non-hex digit.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var high: UInt8? = nil
        for char in text {
            let nibble: UInt8
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = char - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = char - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = char - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return out
    }

    /// ``decode(_:)`` of a string's UTF-8.
    public static func decode(_ text: String) -> [UInt8]? { decode(text.utf8) }
}
