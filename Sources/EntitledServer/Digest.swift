import EntitledCrypto

// Digests for API-key lookup, V1 body keys and HS256 customer tokens, on OpenSSL via EntitledCrypto.

/// Computes HMAC-SHA256 (a protocol so tests can count or fail calls).
public protocol HMACSHA256Computing: Sendable {
    /// The 32-byte MAC of `message` under `key`.
    func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]
}

/// SHA-256 and HMAC-SHA256 backed by OpenSSL.
public struct Digests: HMACSHA256Computing {
    public init() {}

    /// The SHA-256 digest of `message` (32 bytes).
    public static func hash(_ message: [UInt8]) -> [UInt8] { SHA256.hash(message) }

    /// The MAC, or an empty array if OpenSSL fails (which then never equals a real signature).
    public func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        (try? HMACSHA256.authenticationCode(for: message, key: key)) ?? []
    }
}

/// Compares two byte strings without an early exit on the first difference.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool { ConstantTime.equals(a, b) }

/// Constant-time equality of two secrets of any length: compares their SHA-256 digests, so
/// neither the position of a difference nor the expected length leaks.
public func constantTimeSecretEquals(_ a: String, _ b: String) -> Bool {
    ConstantTime.equals(SHA256.hash(Array(a.utf8)), SHA256.hash(Array(b.utf8)))
}
