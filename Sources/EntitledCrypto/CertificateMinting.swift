internal import COpenSSL

/// What to put in a certificate minted by ``X509Certificate/mint(_:subjectKey:issuer:issuerKey:)``.
public struct CertificateTemplate: Sendable {
    /// The subject common name.
    public var commonName: String
    /// Optional subject organization (O).
    public var organization: String?
    /// Optional subject country (C).
    public var country: String?
    /// The serial number; random when nil.
    public var serialNumber: UInt64?
    /// Start of validity, seconds since 1970.
    public var notBefore: Int64
    /// End of validity, seconds since 1970.
    public var notAfter: Int64
    /// Adds a critical basicConstraints (CA:TRUE or CA:FALSE) when set; omitted when nil.
    public var isCertificateAuthority: Bool?
    /// Extensions whose presence is what matters (Apple's marker OIDs): each is added, non-critical,
    /// with the value ASN.1 NULL (`05 00`), as Apple's certificates carry them.
    public var markerExtensionOIDs: [String]
    /// When set, an Authority Information Access extension naming this OCSP responder.
    public var ocspResponderURL: String?

    /// A template; only the name and validity are required.
    public init(
        commonName: String, organization: String? = nil, country: String? = nil, serialNumber: UInt64? = nil,
        notBefore: Int64, notAfter: Int64, isCertificateAuthority: Bool? = nil, markerExtensionOIDs: [String] = [],
        ocspResponderURL: String? = nil
    ) {
        self.commonName = commonName
        self.organization = organization
        self.country = country
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.isCertificateAuthority = isCertificateAuthority
        self.markerExtensionOIDs = markerExtensionOIDs
        self.ocspResponderURL = ocspResponderURL
    }
}

extension X509Certificate {
    /// Mints a v3 certificate for `subjectKey`, signed (ECDSA-SHA256) by `issuerKey`.
    ///
    /// - Parameters:
    ///   - template: names, validity and extensions.
    ///   - subjectKey: the key the certificate certifies.
    ///   - issuer: the issuing certificate; nil for a self-signed root (then `issuerKey` must match `subjectKey`).
    ///   - issuerKey: the key that signs.
    /// - Throws: ``CryptoError`` when OpenSSL refuses a field.
    public static func mint(
        _ template: CertificateTemplate, subjectKey: P256PublicKey, issuer: X509Certificate?, issuerKey: P256PrivateKey
    ) throws(CryptoError) -> X509Certificate {
        let certificate = try OpenSSL.pointer("X509_new") { X509_new() }
        // Owned until handed to X509Certificate; freed on every early exit.
        var handedOver = false
        defer { if !handedOver { X509_free(certificate) } }

        try OpenSSL.call("X509_set_version") { X509_set_version(certificate, 2) }
        var serial = template.serialNumber ?? 0
        if template.serialNumber == nil {
            try withUnsafeMutableBytes(of: &serial) { bytes throws(CryptoError) in
                try OpenSSL.call("RAND_bytes") { RAND_bytes(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
            }
            serial = serial >> 1 | 1  // positive and non-zero
        }
        try OpenSSL.call("ASN1_INTEGER_set_uint64") {
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial)
        }
        _ = try OpenSSL.pointer("ASN1_TIME_set") { ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(template.notBefore)) }
        _ = try OpenSSL.pointer("ASN1_TIME_set") { ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(template.notAfter)) }

        let name = try OpenSSL.pointer("X509_NAME_new") { X509_NAME_new() }
        defer { X509_NAME_free(name) }
        for (field, value) in [("C", template.country), ("O", template.organization), ("CN", template.commonName)] {
            guard let value else { continue }
            try OpenSSL.call("X509_NAME_add_entry_by_txt", .invalidInput) {
                X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0)
            }
        }
        try OpenSSL.call("X509_set_subject_name") { X509_set_subject_name(certificate, name) }
        let issuerName = issuer.map { X509_get_subject_name($0.pointer) } ?? name
        try OpenSSL.call("X509_set_issuer_name") { X509_set_issuer_name(certificate, issuerName) }
        try OpenSSL.call("X509_set_pubkey") { X509_set_pubkey(certificate, subjectKey.key.pointer) }

        var context = X509V3_CTX()
        COpenSSL_X509V3_set_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer?.pointer ?? certificate, certificate, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws(CryptoError) {
            let ext = try OpenSSL.pointer("X509V3_EXT_nconf_nid", .invalidInput) {
                X509V3_EXT_nconf_nid(nil, &context, nid, value)
            }
            defer { X509_EXTENSION_free(ext) }
            try OpenSSL.call("X509_add_ext") { X509_add_ext(certificate, ext, -1) }
        }
        if let isCA = template.isCertificateAuthority {
            try add(NID_basic_constraints, isCA ? "critical,CA:TRUE" : "critical,CA:FALSE")
            try add(NID_key_usage, isCA ? "critical,keyCertSign,cRLSign,digitalSignature" : "critical,digitalSignature")
        }
        if let url = template.ocspResponderURL {
            try add(NID_info_access, "OCSP;URI:\(url)")
        }
        for oid in template.markerExtensionOIDs {
            let object = try OpenSSL.pointer("OBJ_txt2obj", .invalidInput) { OBJ_txt2obj(oid, 1) }
            defer { ASN1_OBJECT_free(object) }
            let value = try OpenSSL.pointer("ASN1_OCTET_STRING_new") { ASN1_OCTET_STRING_new() }
            defer { ASN1_OCTET_STRING_free(value) }
            let null: [UInt8] = [0x05, 0x00]
            try OpenSSL.call("ASN1_OCTET_STRING_set") { ASN1_OCTET_STRING_set(value, null, 2) }
            let ext = try OpenSSL.pointer("X509_EXTENSION_create_by_OBJ") {
                X509_EXTENSION_create_by_OBJ(nil, object, 0, value)
            }
            defer { X509_EXTENSION_free(ext) }
            try OpenSSL.call("X509_add_ext") { X509_add_ext(certificate, ext, -1) }
        }
        _ = try OpenSSL.length("X509_sign") { X509_sign(certificate, issuerKey.key.pointer, fetchedSHA256) }
        let result = try X509Certificate(taking: certificate)
        handedOver = true
        return result
    }
}
