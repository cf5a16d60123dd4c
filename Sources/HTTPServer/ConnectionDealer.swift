internal import CMicroHTTPD
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Accepts connections on the listening socket on a thread of its own and deals each to the
/// serving daemon, which places it on one of its poll threads.
///
/// Left to itself, every poll thread of libmicrohttpd's pool watches the listening socket: all wake
/// for a new connection and the first to run accepts it and up to ten more queued behind it. On
/// two busy cores that first thread was often the same one, and it ended up holding most or all
/// of a client's keep-alive connections: their requests queued on one core while the other idled
/// (half the throughput, and a p99 of tens of milliseconds, in about half the benchmark runs).
/// Here the daemons never have the socket (``HTTPServer/start()`` binds it) and each accepted
/// connection is handed over with `MHD_add_connection`, which picks the poll thread by the
/// descriptor's number modulo the pool's size. Accepted descriptors are not consecutive numbers
/// (any thread of the process takes numbers between two accepts, and closed ones leave gaps, so
/// a run of them can share one residue), so each connection is given a descriptor whose number
/// names the next poll thread in turn (``descriptor(_:residue:modulo:)``).
final class ConnectionDealer: Sendable {
    /// The listening socket (blocking); closed by ``closeWhenEnded()`` once the daemons stopped.
    let socket: Int32
    private let server: HTTPServer
    /// The daemon's poll threads (its pool's size).
    private let pool: Int32
    /// Set when the thread has returned: from then on nothing names ``socket``.
    private let ended = Atomic(false)
    /// Tests only: runs on the thread before each `accept`.
    private let beforeAccept: (@Sendable () -> Void)?

    init(socket: Int32, server: HTTPServer, beforeAccept: (@Sendable () -> Void)? = nil) {
        self.socket = socket
        self.server = server
        self.beforeAccept = beforeAccept
        pool = Int32(clamping: max(1, server.configuration.threads))
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "entitled-http-accept"
        thread.start()
    }

    /// Wakes the thread out of `accept` for good: new connections are refused from now on.
    func stop() { _ = shutdownSocket(socket) }

    /// Closes the listening socket once the thread has returned (after ``stop()``). Not before: a
    /// closed number is soon another descriptor's (the next server's listening socket, in a test
    /// process), and a thread still on its way to `accept` would take that socket's connections
    /// and close them. A thread that has not returned within two seconds keeps the socket open.
    func closeWhenEnded() async {
        let deadline = ContinuousClock.now.advanced(by: .seconds(2))
        while !ended.load(ordering: .acquiring) {
            guard ContinuousClock.now < deadline else { return }
            try? await Task.sleep(for: .milliseconds(1))
        }
        _ = close(socket)
    }

    private func run() {
        defer { ended.store(true, ordering: .releasing) }
        var turn: Int32 = 0
        while true {
            beforeAccept?()
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.accept(socket, $0, &length) }
            }
            guard client >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO, EAGAIN: continue
                // Out of descriptors or memory: the connection waits in the backlog meanwhile.
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(10_000); continue
                // The socket was shut down (`stop`) or closed.
                default: return
                }
            }
            let placed = Self.descriptor(client, residue: turn, modulo: pool)
            turn = (turn + 1) % pool
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { server.deal(placed, address: $0, length: length) }
            }
        }
    }

    /// `client`, or a duplicate of it (the original closed) whose number modulo `pool` is
    /// `residue`: the poll thread libmicrohttpd places it on. Each duplicate takes the lowest free
    /// number above the last, so a few tries find one; the numbers passed over are closed again.
    /// Out of descriptors (or after `4 × pool` tries) the connection keeps its own number: it is
    /// still served, on another poll thread.
    static func descriptor(_ client: Int32, residue: Int32, modulo pool: Int32) -> Int32 {
        guard pool > 1, client % pool != residue else { return client }
        var passed: [Int32] = []
        defer { for descriptor in passed { _ = close(descriptor) } }
        var last = client
        for _ in 0..<(4 * pool) {
            let next = fcntl(client, F_DUPFD_CLOEXEC, last + 1)
            guard next >= 0 else { return client }
            if next % pool == residue {
                _ = close(client)
                return next
            }
            passed.append(next)
            last = next
        }
        return client
    }

    /// accept(2), the connection's descriptor closed on exec (`accept4` is not in Glibc's module).
    private static func accept(_ socket: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: inout socklen_t) -> Int32 {
        #if canImport(Glibc)
            let client = Glibc.accept(socket, address, &length)
        #else
            let client = Darwin.accept(socket, address, &length)
        #endif
        if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
        return client
    }
}

extension HTTPServer {
    /// Hands an accepted connection to the daemon serving new connections (one replaced by a TLS
    /// reload finishes only those it holds), or closes it once shutdown began. Under the state's
    /// lock, so a daemon is never handed a connection after it stopped being the current one.
    func deal(_ client: Int32, address: UnsafePointer<sockaddr>, length: socklen_t) {
        state.withLock { state in
            guard !state.stopping, let daemon = state.daemon else {
                _ = close(client)
                return
            }
            // libmicrohttpd closes the socket itself when it refuses it (connection or per-IP limit).
            _ = MHD_add_connection(daemon.pointer, client, address, length)
        }
    }

}
