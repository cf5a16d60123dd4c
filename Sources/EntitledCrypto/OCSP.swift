internal import COpenSSL

/// A certificate's revocation status as an OCSP responder reported it.
public struct OCSPStatus: Sendable, Equatable {
    /// The responder's verdict.
    public enum State: Sendable, Equatable {
        case good
        /// Revoked, with the CRL reason code (−1 when absent) and the revocation time if given.
        case revoked(reason: Int, at: Int64?)
        /// The responder does not know the certificate.
        case unknown
    }

    /// The verdict.
    public var state: State
    /// When the responder asserted the status (seconds since 1970).
    public var thisUpdate: Int64
    /// When newer information will be available; nil when the responder gives none.
    public var nextUpdate: Int64?
}

/// A minimal OCSP client (RFC 6960): builds nonce-free requests and checks responses.
///
/// Transport is the caller's business, so tests can inject a fake and the network stays outside
/// this module.
public enum OCSP {
    /// The DER `OCSPRequest` for `certificate` issued by `issuer` (SHA-1 CertID, no nonce, unsigned),
    /// to be POSTed as `application/ocsp-request`.
    public static func requestDER(for certificate: X509Certificate, issuer: X509Certificate) throws(CryptoError)
        -> [UInt8]
    {
        let request = try OpenSSL.pointer("OCSP_REQUEST_new") { OCSP_REQUEST_new() }
        defer { OCSP_REQUEST_free(request) }
        let id = try OpenSSL.pointer("OCSP_cert_to_id") { OCSP_cert_to_id(EVP_sha1(), certificate.pointer, issuer.pointer) }
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw CryptoError(.openSSL, "OCSP_request_add0_id failed\(OpenSSL.drainErrors())")
        }
        let length = try OpenSSL.length("i2d_OCSP_REQUEST") { i2d_OCSP_REQUEST(request, nil) }
        var out = [UInt8](repeating: 0, count: length)
        _ = try out.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.length("i2d_OCSP_REQUEST") { i2d_OCSP_REQUEST(request, &cursor) }
        }
        return out
    }

    /// Checks an `OCSPResponse` and returns the status it gives for `certificate`.
    ///
    /// The response must be `successful`, signed by the issuer or by a responder the issuer delegated
    /// (verified up to `trustedRoots` at `time`), answer for this exact certificate, and be current:
    /// `thisUpdate ≤ time + leeway` and, when present, `nextUpdate ≥ time − leeway`.
    /// - Throws: ``CryptoError`` with code `invalidOCSPResponse` when any of that fails.
    public static func status(
        inResponse der: [UInt8], for certificate: X509Certificate, issuer: X509Certificate,
        trustedRoots: [X509Certificate], at time: Int64, leeway: Int64 = 300
    ) throws(CryptoError) -> OCSPStatus {
        let response: OpaquePointer = try der.withUnsafeBufferPointer { buffer throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return try OpenSSL.pointer("d2i_OCSP_RESPONSE", .invalidOCSPResponse) {
                d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
            }
        }
        defer { OCSP_RESPONSE_free(response) }
        let responseStatus = OCSP_response_status(response)
        guard responseStatus == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            throw CryptoError(.invalidOCSPResponse, "OCSP responder answered status \(responseStatus)")
        }
        let basic = try OpenSSL.pointer("OCSP_response_get1_basic", .invalidOCSPResponse) {
            OCSP_response_get1_basic(response)
        }
        defer { OCSP_BASICRESP_free(basic) }

        // A private store: its verification time is set to the caller's time, which must not leak
        // into the verifier's shared store.
        let store = try OpenSSL.pointer("X509_STORE_new") { X509_STORE_new() }
        defer { X509_STORE_free(store) }
        for root in trustedRoots {
            try OpenSSL.call("X509_STORE_add_cert") { X509_STORE_add_cert(store, root.pointer) }
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), time_t(time))
        let certificates = try OpenSSL.pointer("sk_X509_new_null") { COpenSSL_sk_X509_new_null() }
        defer { COpenSSL_sk_X509_free(certificates) }
        _ = COpenSSL_sk_X509_push(certificates, issuer.pointer)
        try OpenSSL.call("OCSP_basic_verify", .invalidOCSPResponse) { OCSP_basic_verify(basic, certificates, store, 0) }

        let id = try OpenSSL.pointer("OCSP_cert_to_id") { OCSP_cert_to_id(EVP_sha1(), certificate.pointer, issuer.pointer) }
        defer { OCSP_CERTID_free(id) }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revoked: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revoked, &thisUpdate, &nextUpdate) == 1 else {
            OpenSSL.clearErrors()
            throw CryptoError(.invalidOCSPResponse, "OCSP response does not cover the certificate")
        }
        guard let thisSeconds = X509Certificate.epochSeconds(UnsafePointer(thisUpdate)) else {
            throw CryptoError(.invalidOCSPResponse, "OCSP response without a readable thisUpdate")
        }
        let nextSeconds = X509Certificate.epochSeconds(UnsafePointer(nextUpdate))
        // Checked against the caller's time rather than OCSP_check_validity, which reads the wall clock.
        guard thisSeconds <= time + leeway else {
            throw CryptoError(.invalidOCSPResponse, "OCSP response is from the future (thisUpdate \(thisSeconds))")
        }
        if let nextSeconds, nextSeconds < time - leeway {
            throw CryptoError(.invalidOCSPResponse, "OCSP response is stale (nextUpdate \(nextSeconds))")
        }
        let state: OCSPStatus.State
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: state = .good
        case V_OCSP_CERTSTATUS_REVOKED:
            state = .revoked(reason: Int(reason), at: X509Certificate.epochSeconds(UnsafePointer(revoked)))
        default: state = .unknown
        }
        return OCSPStatus(state: state, thisUpdate: thisSeconds, nextUpdate: nextSeconds)
    }
}
