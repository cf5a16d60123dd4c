import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A free TCP port on loopback: bind port 0, read the port back, close. (Racy in theory; the
/// responder binds it a few milliseconds later.)
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// `openssl ocsp` running as a responder for one issuer, with an index of good and revoked certificates.
final class OpenSSLOCSPResponder {
    let process = Process()
    let directory: URL
    let port: Int

    init(issuer: X509Certificate, issuerKey: P256PrivateKey, certificates: [(X509Certificate, revoked: Bool)], port: Int) throws {
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ocsp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try issuer.pem.write(to: directory.appendingPathComponent("issuer.pem"), atomically: true, encoding: .utf8)
        try issuerKey.pkcs8PEM().write(to: directory.appendingPathComponent("issuer.key"), atomically: true, encoding: .utf8)
        // openssl's CA index: status, expiry, revocation time[,reason], serial (BN_bn2hex form), file, subject.
        let index = certificates.map { certificate, revoked in
            let serial = certificate.serialNumberHex.uppercased()
            return revoked
                ? "R\t391231235959Z\t240101000000Z,keyCompromise\t\(serial)\tunknown\t/CN=revoked"
                : "V\t391231235959Z\t\t\(serial)\tunknown\t/CN=good"
        }.joined(separator: "\n") + "\n"
        try index.write(to: directory.appendingPathComponent("index.txt"), atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("out.txt")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.currentDirectoryURL = directory
        process.arguments = [
            "ocsp", "-index", "index.txt", "-port", "\(port)", "-rsigner", "issuer.pem", "-rkey", "issuer.key",
            "-CA", "issuer.pem", "-nmin", "60", "-ignore_err",
        ]
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        // Wait until the port listens, so the first request does not race the bind. (openssl's
        // "ACCEPT" line is block-buffered when stdout is a file, so it cannot be waited for.)
        for _ in 0..<100 {
            if Self.isListening(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        stop()
        throw POSIXError(.ECONNREFUSED)
    }

    /// True once something listens on `port`. Read from /proc rather than probed with a connection:
    /// openssl's single-threaded responder stalls on a connection that sends no request.
    static func isListening(port: Int) -> Bool {
        let needle = ":" + String(format: "%04X", port) + " "
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // fields: sl, local_address, rem_address, st (0A = LISTEN), …
                if fields.count > 3, (fields[1] + " ").hasSuffix(needle), fields[3] == "0A" { return true }
            }
        }
        return false
    }

    func stop() {
        if process.isRunning {
            // openssl ocsp does not exit on SIGTERM while it waits in accept(); SIGKILL the process we started.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}


/// A CA with both responders running: leaf → responder signed by the intermediate, intermediate → by the root.
struct LiveOCSPSetup {
    let ca: TestCertificateAuthority
    let leafResponder: OpenSSLOCSPResponder
    let intermediateResponder: OpenSSLOCSPResponder

    init(leafRevoked: Bool = false, intermediateRevoked: Bool = false) throws {
        let leafPort = try freeLoopbackPort()
        let intermediatePort = try freeLoopbackPort()
        ca = try TestCertificateAuthority(
            options: .init(
                ocspResponderURL: "http://127.0.0.1:\(leafPort)/",
                intermediateOCSPResponderURL: "http://127.0.0.1:\(intermediatePort)/", name: "OCSP"))
        leafResponder = try OpenSSLOCSPResponder(
            issuer: ca.intermediate, issuerKey: ca.intermediateKey, certificates: [(ca.leaf, leafRevoked)], port: leafPort)
        intermediateResponder = try OpenSSLOCSPResponder(
            issuer: ca.root, issuerKey: ca.rootKey, certificates: [(ca.intermediate, intermediateRevoked)],
            port: intermediatePort)
    }

    func stop() {
        leafResponder.stop()
        intermediateResponder.stop()
    }
}

@Suite("OCSP", .serialized)
struct OCSPTests {
    /// Online mode checks validity at now; responses carry the real time, so the test uses the wall clock.
    func onlineVerifier(_ ca: TestCertificateAuthority, checker: OCSPRevocationChecker) throws -> SignedDataVerifier {
        try makeTestVerifier(ca: ca, mode: .online, clock: SystemClock(), revocationChecker: checker)
    }

    @Test func goodCertificatesVerifyAndAnswersAreCached() async throws {
        let setup = try LiveOCSPSetup()
        defer { setup.stop() }
        let checker = OCSPRevocationChecker()
        let verifier = try onlineVerifier(setup.ca, checker: checker)
        let token = try setup.ca.signer.sign(sampleTransactionPayload(signedDate: nil))
        let first = await verificationCode { try await verifier.verify(token, as: FlatPayload.self) }
        #expect(first == nil)
        #expect(checker.requestCount == 2)
        // Second call: chain cache and OCSP cache both hit; no request, no X.509 work.
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == nil)
        #expect(checker.requestCount == 2)
        #expect(verifier.x509ValidationCount == 1)
        // With the responders gone, cached answers still serve…
        setup.stop()
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == nil)
        // …but a fresh checker cannot get an answer: retryable.
        let fresh = try onlineVerifier(setup.ca, checker: OCSPRevocationChecker())
        let error = await verificationCode { try await fresh.verify(token, as: FlatPayload.self) }
        #expect(error == .retryableVerificationFailure)
    }

    @Test func revokedLeaf() async throws {
        let setup = try LiveOCSPSetup(leafRevoked: true)
        defer { setup.stop() }
        let checker = OCSPRevocationChecker()
        let verifier = try onlineVerifier(setup.ca, checker: checker)
        let token = try setup.ca.signer.sign(sampleTransactionPayload(signedDate: nil))
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == .certificateRevoked)
        // Revocation is cached too.
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == .certificateRevoked)
        #expect(checker.requestCount == 1)
    }

    @Test func revokedIntermediate() async throws {
        let setup = try LiveOCSPSetup(intermediateRevoked: true)
        defer { setup.stop() }
        let verifier = try onlineVerifier(setup.ca, checker: OCSPRevocationChecker())
        let token = try setup.ca.signer.sign(sampleTransactionPayload(signedDate: nil))
        #expect(await verificationCode { try await verifier.verify(token, as: FlatPayload.self) } == .certificateRevoked)
    }

    @Test func responderDownIsRetryable() async throws {
        let port = try freeLoopbackPort()
        let ca = try TestCertificateAuthority(options: .init(ocspResponderURL: "http://127.0.0.1:\(port)/"))
        let verifier = try onlineVerifier(ca, checker: OCSPRevocationChecker())
        let error: VerificationError
        do {
            _ = try await verifier.verify(try ca.signer.sign(sampleTransactionPayload(signedDate: nil)), as: FlatPayload.self)
            Issue.record("verified without a responder")
            return
        } catch let caught as VerificationError {
            error = caught
        }
        #expect(error.code == .retryableVerificationFailure)
        #expect(error.isRetryable)
    }

    @Test func answerTimeToLive() async throws {
        let setup = try LiveOCSPSetup()
        defer { setup.stop() }
        let checker = OCSPRevocationChecker(timeToLive: 1)  // 1 ms: every call asks again
        // The injected clock moves past the answers' 1 ms, not the wall clock.
        let clock = ManualClock(milliseconds: SystemClock().nowMilliseconds())
        let verifier = try makeTestVerifier(ca: setup.ca, mode: .online, clock: clock, revocationChecker: checker)
        let token = try setup.ca.signer.sign(sampleTransactionPayload(signedDate: nil))
        _ = try await verifier.verify(token, as: FlatPayload.self)
        clock.advance(milliseconds: 5)
        _ = try await verifier.verify(token, as: FlatPayload.self)
        #expect(checker.requestCount == 4)
    }

    @Test func cachesFollowTheInjectedClock() async throws {
        let setup = try LiveOCSPSetup()
        defer { setup.stop() }
        // Starts at the real time (the responder stamps real thisUpdate/nextUpdate), then moves by hand.
        let clock = ManualClock(milliseconds: SystemClock().nowMilliseconds())
        let checker = OCSPRevocationChecker()
        let verifier = try makeTestVerifier(ca: setup.ca, mode: .online, clock: clock, revocationChecker: checker)
        let token = try setup.ca.signer.sign(sampleTransactionPayload(signedDate: nil))
        _ = try await verifier.verify(token, as: FlatPayload.self)
        clock.advance(milliseconds: 1000)
        _ = try await verifier.verify(token, as: FlatPayload.self)
        #expect(checker.requestCount == 2)
        #expect(verifier.x509ValidationCount == 1)
        // 15 minutes later both caches have expired: the chain is validated and OCSP asked again.
        clock.advance(milliseconds: 15 * 60 * 1000)
        _ = try await verifier.verify(token, as: FlatPayload.self)
        #expect(checker.requestCount == 4)
        #expect(verifier.x509ValidationCount == 2)
    }

    /// Transport that returns fixed bytes, to check response handling without a network.
    struct CannedTransport: OCSPTransport {
        var body: [UInt8]
        func post(_ request: [UInt8], to url: String) async throws -> [UInt8] { body }
    }

    @Test func unusableResponsesAreRetryable() async throws {
        let ca = try TestCertificateAuthority(options: .init(ocspResponderURL: "http://127.0.0.1:9/"))
        for body in [[UInt8](), [0x30, 0x03, 0x0A, 0x01, 0x01] /* malformedRequest */, Array("<html>".utf8)] {
            let verifier = try onlineVerifier(ca, checker: OCSPRevocationChecker(transport: CannedTransport(body: body)))
            #expect(await verificationCode { try await verifier.verify(try ca.signer.sign(sampleTransactionPayload(signedDate: nil)), as: FlatPayload.self) }
                == .retryableVerificationFailure)
        }
    }

    @Test func responseSignedByAnotherCAIsRejected() async throws {
        // A real responder, but for a different CA: its answer about our leaf must not be believed.
        let setup = try LiveOCSPSetup()
        defer { setup.stop() }
        let other = try TestCertificateAuthority(options: .init(name: "Other"))
        let responseForOther = try await HTTPOCSPTransport().post(
            try OCSP.requestDER(for: setup.ca.leaf, issuer: setup.ca.intermediate), to: "http://127.0.0.1:\(setup.leafResponder.port)/")
        #expect(throws: CryptoError.self) {
            try OCSP.status(
                inResponse: responseForOther, for: other.leaf, issuer: other.intermediate, trustedRoots: [other.root],
                at: Int64(Date().timeIntervalSince1970))
        }
        let status = try OCSP.status(
            inResponse: responseForOther, for: setup.ca.leaf, issuer: setup.ca.intermediate, trustedRoots: [setup.ca.root],
            at: Int64(Date().timeIntervalSince1970))
        #expect(status.state == .good)
        #expect(status.nextUpdate != nil)
        // Stale: checked far in the future, past nextUpdate.
        #expect(throws: CryptoError.self) {
            try OCSP.status(
                inResponse: responseForOther, for: setup.ca.leaf, issuer: setup.ca.intermediate,
                trustedRoots: [setup.ca.root], at: Int64(Date().timeIntervalSince1970) + 86_400)
        }
    }
}
