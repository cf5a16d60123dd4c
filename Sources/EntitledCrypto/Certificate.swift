internal import COpenSSL
import Foundation

/// A parsed X.509 certificate.
///
/// Owns its `X509` and keeps the exact DER it was read from. Immutable after init; OpenSSL's
/// lazily computed extension cache is filled under its own lock, so concurrent reads are safe
/// (`@unchecked Sendable`).
public final class X509Certificate: @unchecked Sendable, Equatable, CustomStringConvertible {
    let pointer: OpaquePointer
    /// The DER bytes the certificate was parsed from.
    public let derBytes: [UInt8]

    /// Parses DER; throws unless the bytes are exactly one certificate with nothing after it.
    public init(der: some ContiguousBytes) throws(CryptoError) {
        let bytes = der.withUnsafeBytes { Array($0) }
        guard !bytes.isEmpty else { throw CryptoError(.invalidInput, "empty certificate") }
        var consumed = 0
        let pointer: OpaquePointer = try bytes.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let parsed = try OpenSSL.pointer("d2i_X509", .invalidInput) { d2i_X509(nil, &cursor, buffer.count) }
            consumed = cursor.map { $0 - buffer.baseAddress! } ?? 0
            return parsed
        }
        guard consumed == bytes.count else {
            X509_free(pointer)
            throw CryptoError(.invalidInput, "trailing bytes after certificate")
        }
        self.pointer = pointer
        derBytes = bytes
    }

    /// Parses a PEM `CERTIFICATE` block.
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(der: try PEM.decode(pem, label: "CERTIFICATE"))
    }

    /// Takes ownership of an `X509` built in this module (minting).
    init(taking pointer: OpaquePointer) throws(CryptoError) {
        let length = try OpenSSL.length("i2d_X509") { i2d_X509(pointer, nil) }
        var out = [UInt8](repeating: 0, count: length)
        _ = try out.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.length("i2d_X509") { i2d_X509(pointer, &cursor) }
        }
        self.pointer = pointer
        derBytes = out
    }

    deinit { X509_free(pointer) }

    public static func == (lhs: X509Certificate, rhs: X509Certificate) -> Bool { lhs.derBytes == rhs.derBytes }

    /// The PEM form.
    public var pem: String { PEM.encode(derBytes, label: "CERTIFICATE") }

    /// The subject in RFC 2253 form, e.g. `CN=Apple Root CA - G3,OU=…`.
    public var subject: String { Self.name(X509_get_subject_name(pointer)) }

    /// The issuer in RFC 2253 form.
    public var issuer: String { Self.name(X509_get_issuer_name(pointer)) }

    /// The serial number as lowercase hex.
    public var serialNumberHex: String {
        guard let bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(pointer), nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { COpenSSL_free(hex) }
        return String(cString: hex).lowercased()
    }

    /// Start of the validity period, seconds since 1970.
    public var notBefore: Int64 { Self.epochSeconds(X509_get0_notBefore(pointer)) ?? Int64.max }

    /// End of the validity period, seconds since 1970.
    public var notAfter: Int64 { Self.epochSeconds(X509_get0_notAfter(pointer)) ?? Int64.min }

    /// True when `time` (seconds since 1970) lies within notBefore...notAfter.
    public func isValid(at time: Int64) -> Bool { notBefore <= time && time <= notAfter }

    /// The SHA-256 of the DER, colon-separated uppercase hex.
    public var sha256Fingerprint: String { SHA256.fingerprint(derBytes) }

    /// True when the certificate carries an extension with this dotted OID (its value is not examined).
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSL.clearErrors()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// The DER value (the OCTET STRING contents) of the extension with this OID, if present.
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSL.clearErrors()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(pointer, object, -1)
        guard index >= 0, let ext = X509_get_ext(pointer, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        guard let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }

    /// True when basicConstraints marks the certificate as a CA.
    public var isCertificateAuthority: Bool { X509_check_ca(pointer) > 0 }

    /// True when `issuer`'s name matches this certificate's issuer and `issuer`'s key verifies its signature.
    public func isSigned(by issuer: X509Certificate) -> Bool {
        guard X509_check_issued(issuer.pointer, pointer) == X509_V_OK else {
            OpenSSL.clearErrors()
            return false
        }
        guard let key = X509_get0_pubkey(issuer.pointer) else {
            OpenSSL.clearErrors()
            return false
        }
        let result = X509_verify(pointer, key)
        if result != 1 { OpenSSL.clearErrors() }
        return result == 1
    }

    /// The DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] {
        guard let key = X509_get0_pubkey(pointer) else {
            OpenSSL.clearErrors()
            return []
        }
        EVP_PKEY_up_ref(key)
        return (try? OwnedKey(key).subjectPublicKeyInfo()) ?? []
    }

    /// The certificate's key as a P-256 ECDSA key; throws for any other key type or curve.
    public func p256PublicKey() throws(CryptoError) -> P256PublicKey {
        let key = try OpenSSL.pointer("X509_get0_pubkey", .invalidInput) { X509_get0_pubkey(pointer) }
        EVP_PKEY_up_ref(key)
        let owned = OwnedKey(key)
        try owned.requireP256()
        return P256PublicKey(owned: owned)
    }

    /// The OCSP responder URLs from the Authority Information Access extension.
    public var ocspResponderURLs: [String] {
        guard let stack = X509_get1_ocsp(pointer) else { return [] }
        defer { X509_email_free(stack) }
        var urls: [String] = []
        for index in 0..<COpenSSL_sk_OPENSSL_STRING_num(stack) {
            if let value = COpenSSL_sk_OPENSSL_STRING_value(stack, index) { urls.append(String(cString: value)) }
        }
        return urls
    }

    public var description: String { "X509Certificate(\(subject))" }

    static func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = try? MemoryBIO() else { return "" }
        guard X509_NAME_print_ex(bio.pointer, name, 0, COpenSSL_XN_FLAG_RFC2253()) >= 0 else {
            OpenSSL.clearErrors()
            return ""
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSL.clearErrors()
            return nil
        }
        return CivilTime.epochSeconds(
            year: Int64(parts.tm_year) + 1900, month: Int64(parts.tm_mon) + 1, day: Int64(parts.tm_mday),
            hour: Int64(parts.tm_hour), minute: Int64(parts.tm_min), second: Int64(parts.tm_sec))
    }
}

/// Calendar arithmetic without the C library's time-zone state (`timegm` is not in every libc).
public enum CivilTime {
    /// Seconds since 1970-01-01T00:00:00Z for a proleptic Gregorian UTC date and time.
    public static func epochSeconds(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Int64 {
        // Days from civil, after Howard Hinnant's public-domain description of the algorithm.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }
}

/// Why a certificate chain did not verify.
public enum ChainFailure: Error, Sendable, Equatable {
    /// A certificate in the chain is outside its validity period at the verification time.
    case expired(String)
    /// No path to a trusted root, a bad signature, or a constraint violation.
    case untrusted(String)
}

/// A set of trusted root certificates and chain verification against them.
///
/// Owns an `X509_STORE`, which OpenSSL designs to be shared by concurrent verifications
/// (each uses its own `X509_STORE_CTX`); roots are only added in init, hence `@unchecked Sendable`.
public final class X509TrustStore: @unchecked Sendable {
    let store: OpaquePointer
    /// The trusted roots, in the order given.
    public let roots: [X509Certificate]

    /// Trusts exactly `roots`.
    public init(roots: [X509Certificate]) throws(CryptoError) {
        // Filled before `self.store` is set: once every stored property is, a throw runs `deinit`,
        // which would free the store a second time.
        let store = try OpenSSL.pointer("X509_STORE_new") { X509_STORE_new() }
        for root in roots {
            do {
                try OpenSSL.call("X509_STORE_add_cert") { X509_STORE_add_cert(store, root.pointer) }
            } catch {
                X509_STORE_free(store)
                throw error
            }
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }

    /// Builds and verifies `leaf` → `intermediates` → one of the roots at `time` (seconds since 1970).
    ///
    /// Uses OpenSSL's path building with a fixed check time, partial chains off (the path must end at
    /// a configured root) and without `X509_STRICT` (Apple's test certificates lack AKI/SKI).
    /// - Returns: the built chain, leaf first and the trusted root last.
    public func verify(leaf: X509Certificate, intermediates: [X509Certificate], at time: Int64)
        -> Result<[X509Certificate], ChainFailure>
    {
        guard let context = X509_STORE_CTX_new() else {
            return .failure(.untrusted("X509_STORE_CTX_new failed\(OpenSSL.drainErrors())"))
        }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = COpenSSL_sk_X509_new_null() else {
            return .failure(.untrusted("sk_X509_new_null failed\(OpenSSL.drainErrors())"))
        }
        // The stack does not own its entries: the certificates stay owned by their Swift objects.
        defer { COpenSSL_sk_X509_free(untrusted) }
        for certificate in intermediates { _ = COpenSSL_sk_X509_push(untrusted, certificate.pointer) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            return .failure(.untrusted("X509_STORE_CTX_init failed\(OpenSSL.drainErrors())"))
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        // Sets X509_V_FLAG_USE_CHECK_TIME: the time is the caller's, never the wall clock.
        X509_VERIFY_PARAM_set_time(parameters, time_t(time))
        X509_VERIFY_PARAM_clear_flags(parameters, UInt(X509_V_FLAG_PARTIAL_CHAIN))

        let verified = X509_verify_cert(context)
        OpenSSL.clearErrors()
        guard verified == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            let depth = X509_STORE_CTX_get_error_depth(context)
            let message = "\(text) (depth \(depth))"
            switch code {
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
                return .failure(.expired(message))
            default:
                return .failure(.untrusted(message))
            }
        }
        guard let chain = X509_STORE_CTX_get0_chain(context) else {
            return .failure(.untrusted("no chain after verification"))
        }
        var result: [X509Certificate] = [leaf]
        let count = COpenSSL_sk_X509_num(chain)
        for index in 1..<max(1, count) {
            guard let pointer = COpenSSL_sk_X509_value(chain, index) else { continue }
            if let known = (intermediates + roots).first(where: { X509_cmp($0.pointer, pointer) == 0 }) {
                result.append(known)
            } else {
                // Not one of ours (cannot happen with this store, but never hand out a foreign pointer).
                return .failure(.untrusted("chain contains an unexpected certificate"))
            }
        }
        return .success(result)
    }
}
