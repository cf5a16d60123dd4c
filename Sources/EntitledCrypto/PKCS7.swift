internal import COpenSSL

/// PKCS#7 signed data (CMS's predecessor), the container of App Store app receipts.
///
/// Only the signature is checked here: the caller parses the signed content itself (OpenSSL never
/// interprets the receipt) and verifies the chain of ``SignatureCheck/signer`` against its own roots
/// with ``X509TrustStore/verify(leaf:intermediates:at:)``.
public enum PKCS7 {
    /// Who signed a PKCS#7 container whose signature verified.
    public struct SignatureCheck: Sendable {
        /// The signing certificate (from the container's own certificates).
        public var signer: X509Certificate
        /// Every certificate the container carries (the signer's intermediates among them).
        public var certificates: [X509Certificate]
    }

    /// Largest container accepted (real receipts are a few KiB to a few hundred KiB).
    public static let maxBytes = 4 * 1024 * 1024

    /// Verifies the signature of a signed-data container with embedded content over that content.
    ///
    /// The signer's chain is not checked here (OpenSSL's S/MIME purpose rules do not fit Apple's
    /// receipt certificates); the caller checks it at the receipt's own date.
    /// - Throws: ``CryptoError/Code/invalidInput`` for bytes that are not a signed-data container or
    ///   a signature that does not verify.
    public static func verifySignature(der: [UInt8]) throws(CryptoError) -> SignatureCheck {
        guard !der.isEmpty, der.count <= maxBytes else { throw CryptoError(.invalidInput, "PKCS#7 size out of range") }
        let container: UnsafeMutablePointer<COpenSSL.PKCS7> = try der.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.pointer("d2i_PKCS7", .invalidInput) { d2i_PKCS7(nil, &cursor, buffer.count) }
        }
        defer { PKCS7_free(container) }
        guard OBJ_obj2nid(container.pointee.type) == NID_pkcs7_signed, let signed = container.pointee.d.sign else {
            throw CryptoError(.invalidInput, "not PKCS#7 signed data")
        }
        guard let store = X509_STORE_new() else { throw CryptoError(.openSSL, "X509_STORE_new failed\(OpenSSL.drainErrors())") }
        defer { X509_STORE_free(store) }
        // NOVERIFY: signature only; the chain is the caller's (see above).
        let verified = PKCS7_verify(container, nil, store, nil, nil, Int32(PKCS7_NOVERIFY))
        guard verified == 1 else {
            throw CryptoError(.invalidInput, "PKCS#7 signature does not verify\(OpenSSL.drainErrors())")
        }
        guard let signers = PKCS7_get0_signers(container, nil, 0) else {
            throw CryptoError(.invalidInput, "PKCS#7 signer not found\(OpenSSL.drainErrors())")
        }
        defer { COpenSSL_sk_X509_free(signers) }
        guard COpenSSL_sk_X509_num(signers) == 1, let signerPointer = COpenSSL_sk_X509_value(signers, 0) else {
            throw CryptoError(.invalidInput, "PKCS#7 must have exactly one signer")
        }
        let signer = try copy(signerPointer)
        var certificates: [X509Certificate] = []
        if let stack = signed.pointee.cert {
            for index in 0..<min(COpenSSL_sk_X509_num(stack), 16) {
                if let pointer = COpenSSL_sk_X509_value(stack, index) { certificates.append(try copy(pointer)) }
            }
        }
        return SignatureCheck(signer: signer, certificates: certificates)
    }

    /// Signs `content` into a signed-data container (SHA-256, certificates included): for tests and
    /// the simulator, which mint receipts the way Apple's receipt signer does.
    public static func sign(
        _ content: [UInt8], signer: X509Certificate, key: P256PrivateKey, certificates: [X509Certificate]
    ) throws(CryptoError) -> [UInt8] {
        guard let stack = COpenSSL_sk_X509_new_null() else { throw CryptoError(.openSSL, "sk_X509_new_null failed") }
        defer { COpenSSL_sk_X509_free(stack) }
        for certificate in certificates { _ = COpenSSL_sk_X509_push(stack, certificate.pointer) }
        // The BIO reads `content` in place, so it lives only inside this closure.
        let container = try content.withUnsafeBufferPointer { buffer throws(CryptoError) in
            let bio = try MemoryBIO(readOnly: UnsafeRawBufferPointer(buffer))
            return try OpenSSL.pointer("PKCS7_sign") {
                PKCS7_sign(signer.pointer, key.key.pointer, stack, bio.pointer, Int32(PKCS7_BINARY | PKCS7_NOSMIMECAP))
            }
        }
        defer { PKCS7_free(container) }
        let length = try OpenSSL.length("i2d_PKCS7") { i2d_PKCS7(container, nil) }
        var out = [UInt8](repeating: 0, count: length)
        _ = try out.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.length("i2d_PKCS7") { i2d_PKCS7(container, &cursor) }
        }
        return out
    }

    /// An owned copy of a certificate the container owns.
    static func copy(_ pointer: OpaquePointer) throws(CryptoError) -> X509Certificate {
        let length = try OpenSSL.length("i2d_X509", .invalidInput) { i2d_X509(pointer, nil) }
        var out = [UInt8](repeating: 0, count: length)
        _ = try out.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.length("i2d_X509", .invalidInput) { i2d_X509(pointer, &cursor) }
        }
        return try X509Certificate(der: out)
    }
}
