import EntitledCrypto
import Foundation
import HTTPClient
import Synchronization

/// Checks that a certificate has not been revoked (online mode).
public protocol RevocationChecker: Sendable {
    /// Returns normally when `certificate` (issued by `issuer`) is known good at `time`.
    ///
    /// - Parameters:
    ///   - trustedRoots: the verifier's roots, for checking the responder's own certificate.
    ///   - time: milliseconds since 1970, from the verifier's clock.
    /// - Throws: `CERTIFICATE_REVOKED` when revoked; `RETRYABLE_VERIFICATION_FAILURE` when the answer
    ///   could not be obtained (network, unusable response), so the caller can ask for a retry.
    func check(
        _ certificate: X509Certificate, issuer: X509Certificate, trustedRoots: [X509Certificate], at time: Int64
    ) async throws(VerificationError)
}

/// Sends a DER OCSP request and returns the DER response body.
public protocol OCSPTransport: Sendable {
    /// POSTs `request` (`application/ocsp-request`) to `url` and returns the response body.
    /// Throws for any network failure or a non-200 status.
    func post(_ request: [UInt8], to url: String) async throws -> [UInt8]
}

/// OCSP over HTTP POST through ``OutboundHTTP`` (``CurlHTTP`` by default).
public struct HTTPOCSPTransport: OCSPTransport {
    /// Seconds the whole exchange may take.
    public var timeout: Double
    let http: any OutboundHTTP

    /// - Parameters:
    ///   - timeout: seconds the whole exchange may take (default 10).
    ///   - http: the client; by default one accepting answers up to 1 MiB (OCSP answers are a few KiB).
    public init(timeout: Double = 10, http: any OutboundHTTP = CurlHTTP(maxResponseBytes: 1 << 20)) {
        self.timeout = timeout
        self.http = http
    }

    public func post(_ request: [UInt8], to url: String) async throws -> [UInt8] {
        guard let endpoint = URL(string: url), endpoint.scheme == "http" || endpoint.scheme == "https" else {
            throw OutboundHTTPError(message: "not an http URL: \(url)", kind: .invalidRequest)
        }
        let response = try await http.send(
            OutboundRequest(
                method: "POST", url: endpoint,
                headers: ["Content-Type": "application/ocsp-request", "Accept": "application/ocsp-response"], body: request,
                timeoutSeconds: timeout))
        guard response.status == 200 else { throw OutboundHTTPError(message: "HTTP \(response.status)") }
        return response.body
    }
}

/// Revocation checking with OCSP (RFC 6960), with answers cached.
///
/// A good answer is cached until the earlier of the response's `nextUpdate` and ``timeToLive``;
/// a revoked answer is cached for ``timeToLive`` (revocation is permanent, but a bounded cache
/// stays bounded). Failures are not cached.
public final class OCSPRevocationChecker: RevocationChecker {
    struct Key: Hashable { var certificate: [UInt8] }
    struct Cached { var revoked: OCSPStatus.State?; var expiresAt: Int64 }

    private let transport: any OCSPTransport
    /// Milliseconds an answer is reused at most.
    public let timeToLive: Int64
    /// Used instead of the certificate's AIA responder URL when set (tests, or a local OCSP proxy).
    public let responderURLOverride: String?
    private let cache = Mutex<[Key: Cached]>([:])
    private let requests = Atomic<Int>(0)

    /// - Parameters:
    ///   - transport: how requests are sent (inject a fake in tests).
    ///   - timeToLive: milliseconds an answer is reused at most (default 15 minutes).
    ///   - responderURLOverride: a responder for every certificate, instead of the one each names.
    public init(
        transport: any OCSPTransport = HTTPOCSPTransport(), timeToLive: Int64 = 15 * 60 * 1000,
        responderURLOverride: String? = nil
    ) {
        self.transport = transport
        self.timeToLive = timeToLive
        self.responderURLOverride = responderURLOverride
    }

    /// How many requests were sent (a cache hit sends none).
    public var requestCount: Int { requests.load(ordering: .relaxed) }

    /// Drops every cached answer.
    public func removeAll() { cache.withLock { $0.removeAll() } }

    public func check(
        _ certificate: X509Certificate, issuer: X509Certificate, trustedRoots: [X509Certificate], at time: Int64
    ) async throws(VerificationError) {
        // The certificate and its issuer together identify the CertID; hashing both keeps keys small.
        let key = Key(certificate: SHA256.hash(concatenating: [certificate.derBytes, issuer.derBytes]))
        let cached: Cached? = cache.withLock { cache in
            guard let entry = cache[key] else { return nil }
            if entry.expiresAt <= time {
                cache[key] = nil
                return nil
            }
            return entry
        }
        if let cached {
            if let revoked = cached.revoked { throw Self.revokedError(certificate, revoked) }
            return
        }

        guard let url = responderURLOverride ?? certificate.ocspResponderURLs.first else {
            throw VerificationError(.invalidCertificate, "\(certificate.subject) names no OCSP responder")
        }
        let request: [UInt8]
        do {
            request = try OCSP.requestDER(for: certificate, issuer: issuer)
        } catch {
            throw VerificationError(.invalidCertificate, "cannot build an OCSP request: \(error.message)")
        }
        requests.add(1, ordering: .relaxed)
        let body: [UInt8]
        do {
            body = try await transport.post(request, to: url)
        } catch {
            throw VerificationError(.retryableVerificationFailure, "OCSP responder \(url) unreachable: \(error)")
        }
        let status: OCSPStatus
        do {
            status = try OCSP.status(
                inResponse: body, for: certificate, issuer: issuer, trustedRoots: trustedRoots,
                at: time / 1000)
        } catch {
            throw VerificationError(.retryableVerificationFailure, "unusable OCSP response from \(url): \(error.message)")
        }
        switch status.state {
        case .good:
            let until = status.nextUpdate.map { min($0 * 1000, time + timeToLive) } ?? time + timeToLive
            cache.withLock { $0[key] = Cached(revoked: nil, expiresAt: until) }
        case .revoked:
            cache.withLock { $0[key] = Cached(revoked: status.state, expiresAt: time + timeToLive) }
            throw Self.revokedError(certificate, status.state)
        case .unknown:
            throw VerificationError(.chainUntrusted, "OCSP responder does not know \(certificate.subject)")
        }
    }

    private static func revokedError(_ certificate: X509Certificate, _ state: OCSPStatus.State) -> VerificationError {
        var reason = ""
        if case .revoked(let code, _) = state, code >= 0 { reason = " (reason \(code))" }
        return VerificationError(.certificateRevoked, "\(certificate.subject) is revoked\(reason)")
    }
}
