internal import COpenSSL
import Foundation

/// SHA-256 digests.
public enum SHA256 {
    /// The SHA-256 digest of `bytes` (32 bytes).
    public static func hash(_ bytes: some ContiguousBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                // The one-shot SHA256() cannot fail for in-memory input.
                _ = COpenSSL.SHA256(
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self))
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
        hash(bytes).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
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

/// Lower-case hexadecimal text of bytes (digests as keys and in logs).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lower-case hex digits per byte.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
