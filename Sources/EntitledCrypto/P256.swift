internal import COpenSSL
import Foundation

/// SHA-256 fetched from the default provider once: passing `EVP_sha256()` makes OpenSSL 3 look the
/// implementation up again on every init, which is measurable on the verifier's hot path.
/// An `EVP_MD` is immutable and reference-counted, so sharing it between threads is safe.
nonisolated(unsafe) let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

/// Owns an `EVP_PKEY`. Immutable after init; OpenSSL allows concurrent read-only use of one key
/// (signing and verification create their own per-call contexts), hence `@unchecked Sendable`.
final class OwnedKey: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// Throws unless the key is an EC key on P-256 (prime256v1).
    func requireP256() throws(CryptoError) {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else {
            throw CryptoError(.invalidInput, "not an EC key")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else {
            throw CryptoError(.invalidInput, "EC key without a named curve\(OpenSSL.drainErrors())")
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curve == "prime256v1" || curve == "P-256" else {
            throw CryptoError(.invalidInput, "EC key on \(curve), expected P-256")
        }
    }

    /// Reads a PEM private key of any type (PKCS#8, or the type's own form such as SEC 1 or PKCS#1).
    convenience init(privateKeyPEM pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let pointer: OpaquePointer = try bytes.withUnsafeBufferPointer { buffer throws(CryptoError) in
            let bio = try MemoryBIO(readOnly: UnsafeRawBufferPointer(buffer))
            return try OpenSSL.pointer("PEM_read_bio_PrivateKey", .invalidInput) {
                PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil)
            }
        }
        self.init(pointer)
    }

    /// The unencrypted PKCS#8 PEM of a private key.
    func pkcs8PEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        try OpenSSL.call("PEM_write_bio_PKCS8PrivateKey") {
            PEM_write_bio_PKCS8PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil)
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// Signs `message` with SHA-256 and the key's own scheme (ECDSA DER, or RSA PKCS#1 v1.5).
    func sha256Signature(_ message: some ContiguousBytes) throws(CryptoError) -> [UInt8] {
        let context = try OpenSSL.pointer("EVP_MD_CTX_new") { EVP_MD_CTX_new() }
        defer { EVP_MD_CTX_free(context) }
        try OpenSSL.call("EVP_DigestSignInit") { EVP_DigestSignInit(context, nil, fetchedSHA256, nil, pointer) }
        let bytes = message.withUnsafeBytes { Array($0) }
        var length = 0
        try OpenSSL.call("EVP_DigestSign") { EVP_DigestSign(context, nil, &length, bytes, bytes.count) }
        var out = [UInt8](repeating: 0, count: length)
        try OpenSSL.call("EVP_DigestSign") { EVP_DigestSign(context, &out, &length, bytes, bytes.count) }
        return Array(out.prefix(length))
    }

    /// Whether `signature` (the key's own scheme over SHA-256) verifies for `message`; any failure answers false.
    func isValidSHA256Signature(_ signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, fetchedSHA256, nil, pointer) == 1 else {
            OpenSSL.clearErrors()
            return false
        }
        let result = EVP_DigestVerify(
            context, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count)
        // A bad signature leaves an entry on the error queue; it is an answer, not a failure.
        if result != 1 { OpenSSL.clearErrors() }
        return result == 1
    }

    /// The SubjectPublicKeyInfo DER of the key's public half.
    func subjectPublicKeyInfo() throws(CryptoError) -> [UInt8] {
        let length = try OpenSSL.length("i2d_PUBKEY") { i2d_PUBKEY(pointer, nil) }
        var out = [UInt8](repeating: 0, count: length)
        _ = try out.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.length("i2d_PUBKEY") { i2d_PUBKEY(pointer, &cursor) }
        }
        return out
    }
}

/// An ECDSA P-256 public key.
public final class P256PublicKey: Sendable, Equatable {
    let key: OwnedKey

    init(owned: OwnedKey) { key = owned }

    /// Reads a DER SubjectPublicKeyInfo; throws unless it holds a P-256 key.
    public init(subjectPublicKeyInfo der: some ContiguousBytes) throws(CryptoError) {
        let bytes = der.withUnsafeBytes { Array($0) }
        let pointer: OpaquePointer = try bytes.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.pointer("d2i_PUBKEY", .invalidInput) { d2i_PUBKEY(nil, &cursor, buffer.count) }
        }
        key = OwnedKey(pointer)
        try key.requireP256()
    }

    /// Reads a PEM `PUBLIC KEY` block.
    public convenience init(pem: String) throws(CryptoError) {
        let der = try PEM.decode(pem, label: "PUBLIC KEY")
        try self.init(subjectPublicKeyInfo: der)
    }

    /// The DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] {
        // Encoding a key we already hold cannot fail short of memory exhaustion.
        (try? key.subjectPublicKeyInfo()) ?? []
    }

    /// The PEM `PUBLIC KEY` form.
    public var pem: String { PEM.encode(subjectPublicKeyInfo, label: "PUBLIC KEY") }

    public static func == (lhs: P256PublicKey, rhs: P256PublicKey) -> Bool {
        lhs.subjectPublicKeyInfo == rhs.subjectPublicKeyInfo
    }

    /// Checks an ES256 signature in JWS form (raw r||s, 64 bytes) over `message`.
    ///
    /// A wrong length, a zero or out-of-range component, or a mismatch all answer false.
    public func isValidES256Signature(raw signature: some ContiguousBytes, for message: some ContiguousBytes) -> Bool {
        signature.withUnsafeBytes { raw in
            message.withUnsafeBytes { message in
                isValidES256Signature(raw: raw, message: message)
            }
        }
    }

    /// The pointer form of ``isValidES256Signature(raw:for:)``, for callers that already hold buffers.
    public func isValidES256Signature(raw: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        guard raw.count == 64 else { return false }
        // DER of two 32-byte integers is at most 2 + 2 * (2 + 33) = 72 bytes; keep it on the stack.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 72) { der in
            let length = ECDSASignature.encodeDER(raw: raw, into: der)
            return isValidSignature(der: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(der)[0..<length]), message: message)
        }
    }

    /// Checks an ECDSA-SHA256 signature in DER form over `message`.
    public func isValidSignature(der: some ContiguousBytes, for message: some ContiguousBytes) -> Bool {
        der.withUnsafeBytes { der in message.withUnsafeBytes { message in isValidSignature(der: der, message: message) } }
    }

    func isValidSignature(der: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        key.isValidSHA256Signature(der, message: message)
    }
}

/// An ECDSA P-256 private key.
public final class P256PrivateKey: Sendable {
    let key: OwnedKey

    /// Generates a fresh key.
    public init() throws(CryptoError) {
        key = OwnedKey(try OpenSSL.pointer("EVP_EC_gen") { COpenSSL_EC_gen_P256() })
    }

    /// Reads a PEM private key: PKCS#8 (`PRIVATE KEY`) or SEC 1 (`EC PRIVATE KEY`). Throws unless P-256.
    public init(pem: String) throws(CryptoError) {
        key = try OwnedKey(privateKeyPEM: pem)
        try key.requireP256()
    }

    /// Reads a DER PKCS#8 PrivateKeyInfo.
    public init(pkcs8 der: some ContiguousBytes) throws(CryptoError) {
        let bytes = der.withUnsafeBytes { Array($0) }
        let pointer: OpaquePointer = try bytes.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.pointer("d2i_AutoPrivateKey", .invalidInput) {
                d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            }
        }
        key = OwnedKey(pointer)
        try key.requireP256()
    }

    /// The unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pkcs8PEM() throws(CryptoError) -> String { try key.pkcs8PEM() }

    /// The matching public key.
    public var publicKey: P256PublicKey {
        get throws(CryptoError) {
            try P256PublicKey(subjectPublicKeyInfo: try key.subjectPublicKeyInfo())
        }
    }

    /// Signs `message` with ECDSA-SHA256 and returns the DER signature.
    public func signature(der message: some ContiguousBytes) throws(CryptoError) -> [UInt8] {
        try key.sha256Signature(message)
    }

    /// Signs `message` for a JWS: ES256, raw r||s (64 bytes).
    public func es256Signature(for message: some ContiguousBytes) throws(CryptoError) -> [UInt8] {
        let der = try signature(der: message)
        guard let raw = ECDSASignature.rawFromDER(der) else {
            throw CryptoError(.openSSL, "OpenSSL produced an unexpected ECDSA signature encoding")
        }
        return raw
    }
}

/// Conversion between the two ECDSA P-256 signature encodings: JWS raw r||s and X.509/OpenSSL DER.
///
/// Done in Swift rather than through `ECDSA_SIG` because it sits on the verifier's hot path and
/// needs no allocation this way.
public enum ECDSASignature {
    /// DER `SEQUENCE { INTEGER r, INTEGER s }` for a 64-byte raw signature.
    public static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 72)
        let length = raw.withUnsafeBytes { raw in
            out.withUnsafeMutableBufferPointer { encodeDER(raw: raw, into: $0) }
        }
        return Array(out.prefix(length))
    }

    /// Writes the DER form of a 64-byte raw signature into `out` (capacity ≥ 72); returns its length.
    static func encodeDER(raw: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var position = 2
        func integer(_ offset: Int) {
            // Minimal encoding: drop leading zeros, then add one back if the high bit is set (sign).
            var start = offset
            while start < offset + 31, raw[start] == 0 { start += 1 }
            let needsPad = raw[start] & 0x80 != 0
            let length = offset + 32 - start + (needsPad ? 1 : 0)
            out[position] = 0x02
            out[position + 1] = UInt8(length)
            position += 2
            if needsPad {
                out[position] = 0
                position += 1
            }
            for index in start..<(offset + 32) {
                out[position] = raw[index]
                position += 1
            }
        }
        integer(0)
        integer(32)
        out[0] = 0x30
        out[1] = UInt8(position - 2)
        return position
    }

    /// The 64-byte raw form of a DER signature; nil unless strictly DER with components of at most 32 bytes.
    public static func rawFromDER(_ der: [UInt8]) -> [UInt8]? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2, der[1] < 0x80 else { return nil }
        var out = [UInt8](repeating: 0, count: 64)
        var position = 2
        for slot in 0..<2 {
            guard position + 2 <= der.count, der[position] == 0x02 else { return nil }
            var length = Int(der[position + 1])
            position += 2
            guard length > 0, position + length <= der.count else { return nil }
            var start = position
            if der[start] == 0, length > 1 {
                // A leading zero is only allowed to clear the sign bit.
                guard der[start + 1] & 0x80 != 0 else { return nil }
                start += 1
                length -= 1
            }
            guard length <= 32 else { return nil }
            for index in 0..<length { out[slot * 32 + 32 - length + index] = der[start + index] }
            position = start + length
        }
        return position == der.count ? out : nil
    }
}

/// PEM armour (RFC 7468) for DER bytes.
public enum PEM {
    /// Wraps `der` in `-----BEGIN label-----` lines, 64 columns.
    public static func encode(_ der: [UInt8], label: String) -> String {
        let body = Base64.encode(der)
        var lines: [Substring] = []
        var index = body.startIndex
        while index < body.endIndex {
            let end = body.index(index, offsetBy: 64, limitedBy: body.endIndex) ?? body.endIndex
            lines.append(body[index..<end])
            index = end
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }

    /// The DER inside the first `label` block of `text`.
    public static func decode(_ text: String, label: String) throws(CryptoError) -> [UInt8] {
        let begin = "-----BEGIN \(label)-----", end = "-----END \(label)-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex)
        else { throw CryptoError(.invalidInput, "no PEM \(label) block") }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let der = Base64.decode(body) else { throw CryptoError(.invalidInput, "PEM \(label) body is not base64") }
        return der
    }
}
