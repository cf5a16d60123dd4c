internal import CMicroHTTPD
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A certificate chain and its private key, PEM, for HTTPS.
public struct TLSCredentials: Sendable, Equatable {
    /// The server's certificate first, then any intermediates.
    public var certificateChainPEM: String
    /// The private key (PKCS#8, PKCS#1 or SEC1 PEM, unencrypted).
    public var privateKeyPEM: String

    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// The GnuTLS priority string every HTTPS daemon uses: TLS 1.2 and 1.3 only; AES-GCM and
    /// ChaCha20-Poly1305 (AEAD) only; ECDHE key exchange (forward secrecy) for TLS 1.2; the
    /// server's preference order. Apple requires TLS 1.2 or later for notification URLs.
    public static let priorities =
        "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305"
        + ":-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"

    /// Throws when this libmicrohttpd has no TLS, or GnuTLS refuses the pair (not PEM, or the key
    /// does not belong to the certificate).
    public func check() throws(HTTPServer.StartError) {
        guard CMicroHTTPD_tlsSupported() != 0 else {
            throw HTTPServer.StartError(description: "this libmicrohttpd was built without TLS support")
        }
        guard CMicroHTTPD_checkTLS(certificateChainPEM, privateKeyPEM, Self.priorities) != 0 else {
            throw HTTPServer.StartError(
                description: "the TLS certificate or private key was refused (not PEM, or the key does not match the certificate)")
        }
    }
}

/// A running libmicrohttpd daemon and the C strings it was started with (freed when it stops).
///
/// `@unchecked Sendable`: both are set once, at the start, and only read after.
final class DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    private let strings: [UnsafeMutablePointer<CChar>]

    init(pointer: OpaquePointer, strings: [UnsafeMutablePointer<CChar>]) {
        self.pointer = pointer
        self.strings = strings
    }

    /// Stops the threads and frees the strings. Once.
    func stop() {
        MHD_stop_daemon(pointer)
        for string in strings { free(string) }
    }
}

extension HTTPServer {
    static func bits(_ pointer: OpaquePointer?) -> UInt {
        pointer.map { UInt(bitPattern: Int(bitPattern: $0)) } ?? 0
    }

    /// Starts a daemon without a listening socket: the ``ConnectionDealer`` hands it connections.
    func launch(flags: UInt32, tls: TLSCredentials?) -> DaemonHandle? {
        // libmicrohttpd keeps pointers to the PEM texts; they live as long as the daemon.
        let strings = tls.map { [strdup($0.certificateChainPEM)!, strdup($0.privateKeyPEM)!, strdup(TLSCredentials.priorities)!] } ?? []
        var options = CMicroHTTPD_Options(
            flags: flags,
            threadPoolSize: UInt32(max(1, configuration.threads)),
            connectionLimit: UInt32(max(1, configuration.connectionLimit)),
            perIPConnectionLimit: UInt32(max(0, configuration.perIPConnectionLimit)),
            connectionTimeoutSeconds: UInt32(max(1, configuration.idleTimeoutSeconds)),
            // The pool holds the request line and headers plus read/write buffers.
            connectionMemoryLimit: configuration.maxHeaderBytes + 16 * 1024,
            strictForClient: 1,
            uriLog: requestLineHandler, uriLogContext: Unmanaged.passUnretained(self).toOpaque(),
            notifyConnection: connectionHandler,
            notifyConnectionContext: Unmanaged.passUnretained(watch).toOpaque(),
            tlsCertificate: strings.isEmpty ? nil : UnsafePointer(strings[0]),
            tlsKey: strings.isEmpty ? nil : UnsafePointer(strings[1]),
            tlsPriorities: strings.isEmpty ? nil : UnsafePointer(strings[2]))
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let daemon = CMicroHTTPD_start(&options, accessHandler, context, completedHandler, context) else {
            for string in strings { free(string) }
            return nil
        }
        return DaemonHandle(pointer: daemon, strings: strings)
    }

    /// Serves new connections with `credentials` from now on, without dropping any: a new daemon
    /// starts, the dealer hands it every connection from then on, and the old one
    /// finishes the connections it holds, each closed after its next response (`Connection: close`),
    /// and stops when none is left. When the new pair is refused, the old one keeps serving.
    public func reloadTLS(_ credentials: TLSCredentials) throws(StartError) {
        guard configuration.tls != nil else {
            throw StartError(description: "the server was started without TLS")
        }
        try credentials.check()
        let old: DaemonHandle = try state.withLock { state throws(StartError) in
            guard !state.stopping, let current = state.daemon else {
                throw StartError(description: "the server is not running")
            }
            guard let fresh = launch(flags: state.flags, tls: credentials) else {
                throw StartError(description: "cannot start a daemon with the new certificate")
            }
            // Under this lock the dealer hands new connections to `fresh` from now on.
            state.daemon = fresh
            state.draining.append(current)
            currentDaemon.store(Self.bits(fresh.pointer), ordering: .relaxed)
            drainingCount.add(1, ordering: .relaxed)
            return current
        }
        Task.detached { await self.retire(old) }
    }

    /// Waits until `daemon` holds no connection, then stops it (unless shutdown took it first).
    private func retire(_ daemon: DaemonHandle) async {
        // The count is read under the lock and only while the daemon is still listed: shutdown
        // unlists a draining daemon under the same lock before it stops (frees) it, so this never
        // touches a stopped daemon.
        while true {
            let busy = state.withLock { state -> Bool? in
                guard state.draining.contains(where: { $0 === daemon }) else { return nil }
                return CMicroHTTPD_currentConnections(daemon.pointer) > 0
            }
            guard let busy else { return }
            if !busy { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let mine = state.withLock { state in
            guard let index = state.draining.firstIndex(where: { $0 === daemon }) else { return false }
            state.draining.remove(at: index)
            return true
        }
        guard mine else { return }
        drainingCount.subtract(1, ordering: .relaxed)
        daemon.stop()
    }

    /// Whether `connection` belongs to a daemon a TLS reload replaced.
    func isDraining(_ connection: OpaquePointer) -> Bool {
        guard drainingCount.load(ordering: .relaxed) > 0 else { return false }
        return Self.bits(CMicroHTTPD_connectionDaemon(connection)) != currentDaemon.load(ordering: .relaxed)
    }
}
