internal import COpenSSL
import Foundation

/// An RSA public key, for RS256 (RSASSA-PKCS1-v1_5 with SHA-256) verification.
///
/// Keys below 2048 bits or with an exponent other than a small odd number are refused: Google
/// publishes 2048-bit keys with e = 65537, and anything weaker is not a key we should trust.
public final class RSAPublicKey: Sendable, Equatable {
    let key: OwnedKey

    /// The smallest modulus accepted, in bits.
    public static let minimumBits = 2048
    /// The largest modulus accepted, in bits (bounds the work a hostile key can cause).
    public static let maximumBits = 8192

    init(owned: OwnedKey) throws(CryptoError) {
        key = owned
        try Self.check(owned)
    }

    /// Reads a DER SubjectPublicKeyInfo; throws unless it holds an acceptable RSA key.
    public convenience init(subjectPublicKeyInfo der: some ContiguousBytes) throws(CryptoError) {
        let bytes = der.withUnsafeBytes { Array($0) }
        let pointer: OpaquePointer = try bytes.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.pointer("d2i_PUBKEY", .invalidInput) { d2i_PUBKEY(nil, &cursor, buffer.count) }
        }
        try self.init(owned: OwnedKey(pointer))
    }

    /// Builds the key from its big-endian modulus and public exponent (a JWK's `n` and `e`, decoded).
    public convenience init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        // Building the SubjectPublicKeyInfo in Swift keeps the OpenSSL surface to one parser.
        let modulus = Array(modulus.drop { $0 == 0 }), exponent = Array(exponent.drop { $0 == 0 })
        guard !modulus.isEmpty, !exponent.isEmpty, modulus.count <= Self.maximumBits / 8, exponent.count <= 8 else {
            throw CryptoError(.invalidInput, "RSA modulus or exponent out of range")
        }
        let rsaPublicKey = DER.sequence(DER.unsignedInteger(modulus) + DER.unsignedInteger(exponent))
        // AlgorithmIdentifier { rsaEncryption (1.2.840.113549.1.1.1), NULL }
        let algorithm: [UInt8] = [0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        let spki = DER.sequence(algorithm + DER.tagged(0x03, [0x00] + rsaPublicKey))
        try self.init(subjectPublicKeyInfo: spki)
    }

    private static func check(_ key: OwnedKey) throws(CryptoError) {
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else { throw CryptoError(.invalidInput, "not an RSA key") }
        let bits = Int(EVP_PKEY_get_bits(key.pointer))
        guard bits >= minimumBits, bits <= maximumBits else {
            throw CryptoError(.invalidInput, "RSA key of \(bits) bits, expected \(minimumBits)...\(maximumBits)")
        }
    }

    /// The DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] { (try? key.subjectPublicKeyInfo()) ?? [] }

    /// The big-endian modulus (`n`).
    public var modulus: [UInt8] { key.bigNumberParameter("n") }
    /// The big-endian public exponent (`e`).
    public var exponent: [UInt8] { key.bigNumberParameter("e") }

    public static func == (lhs: RSAPublicKey, rhs: RSAPublicKey) -> Bool {
        lhs.subjectPublicKeyInfo == rhs.subjectPublicKeyInfo
    }

    /// Checks an RS256 (PKCS#1 v1.5, SHA-256) signature over `message`; any failure answers false.
    public func isValidRS256Signature(_ signature: some ContiguousBytes, for message: some ContiguousBytes) -> Bool {
        signature.withUnsafeBytes { signature in
            message.withUnsafeBytes { message in key.isValidSHA256Signature(signature, message: message) }
        }
    }
}

/// An RSA private key, for RS256 signing (a service account's assertion; a fake Google's tokens).
public final class RSAPrivateKey: Sendable {
    let key: OwnedKey

    /// Generates a fresh key of `bits` (2048 by default).
    public init(bits: Int = 2048) throws(CryptoError) {
        guard bits >= RSAPublicKey.minimumBits, bits <= RSAPublicKey.maximumBits else {
            throw CryptoError(.invalidInput, "RSA key size \(bits) out of range")
        }
        key = OwnedKey(try OpenSSL.pointer("EVP_RSA_gen") { COpenSSL_RSA_gen(UInt32(bits)) })
    }

    /// Reads a PEM private key, PKCS#8 (`PRIVATE KEY`, as in a service-account key file) or
    /// PKCS#1 (`RSA PRIVATE KEY`); throws unless it is an acceptable RSA key.
    public init(pem: String) throws(CryptoError) {
        key = try OwnedKey(privateKeyPEM: pem)
        _ = try RSAPublicKey(subjectPublicKeyInfo: try key.subjectPublicKeyInfo())
    }

    /// The unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pkcs8PEM() throws(CryptoError) -> String { try key.pkcs8PEM() }

    /// The matching public key.
    public var publicKey: RSAPublicKey {
        get throws(CryptoError) { try RSAPublicKey(subjectPublicKeyInfo: try key.subjectPublicKeyInfo()) }
    }

    /// Signs `message` with RS256 (PKCS#1 v1.5, SHA-256).
    public func rs256Signature(for message: some ContiguousBytes) throws(CryptoError) -> [UInt8] {
        try key.sha256Signature(message)
    }
}

extension OwnedKey {
    /// A big-number parameter of the key (`n`, `e`) as big-endian bytes; empty if absent.
    func bigNumberParameter(_ name: String) -> [UInt8] {
        var number: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(pointer, name, &number) == 1, let number else {
            OpenSSL.clearErrors()
            return []
        }
        defer { BN_free(number) }
        var out = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        _ = BN_bn2bin(number, &out)
        return out
    }
}

/// The few DER encodings needed to wrap an RSA public key.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func tagged(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
    static func sequence(_ content: [UInt8]) -> [UInt8] { tagged(0x30, content) }

    /// A non-negative INTEGER from big-endian magnitude bytes (no leading zeros).
    static func unsignedInteger(_ magnitude: [UInt8]) -> [UInt8] {
        tagged(0x02, magnitude.first.map { $0 & 0x80 != 0 } == true ? [0] + magnitude : magnitude)
    }
}
