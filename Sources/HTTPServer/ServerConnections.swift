internal import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The requests whose connection is suspended while their async handler runs.
///
/// Exactly one side resumes each connection: the handler's task when it finishes, or shutdown
/// when the grace period is over (libmicrohttpd aborts in `MHD_stop_daemon` while any connection
/// is suspended). Whoever removes the entry first owns the resume.
final class SuspendedRequests: Sendable {
    final class Entry: @unchecked Sendable {
        let connection: ConnectionHandle
        let exchange: Exchange
        /// Set under the registry's lock right after the task is created.
        var task: Task<Void, Never>?

        init(connection: ConnectionHandle, exchange: Exchange) {
            self.connection = connection
            self.exchange = exchange
        }
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var drained = false
    }

    private let state = Mutex(State())

    /// Runs `suspend` (which suspends the connection and starts the handler) and records the entry,
    /// both under the lock; false, without running it, once `drain()` has run.
    func insert(_ entry: Entry, _ suspend: () -> Task<Void, Never>) -> Bool {
        state.withLock { state in
            guard !state.drained else { return false }
            entry.task = suspend()
            state.entries[ObjectIdentifier(entry)] = entry
            return true
        }
    }

    /// Removes `entry`; true when it was still there (the caller now owns resuming it).
    func remove(_ entry: Entry) -> Bool {
        state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(entry)) != nil }
    }

    /// Takes every entry; later `insert` calls refuse.
    func drain() -> [Entry] {
        state.withLock { state in
            state.drained = true
            defer { state.entries.removeAll() }
            return Array(state.entries.values)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

/// Closes connections whose request headers are overdue, however slowly their bytes trickle in
/// (libmicrohttpd's idle timeout restarts with every byte).
///
/// Each connection has a deadline: `headerTimeout` after accept for its first request, the idle
/// timeout after each response for the next. The first access-handler call of a request (its
/// headers are in) clears it. A thread checks every 100 ms and shuts the overdue sockets down;
/// libmicrohttpd then sees the end of input and closes the connection itself. The socket is
/// still open then: libmicrohttpd reports a connection closed (and the entry leaves the table
/// under the same lock) before it closes its socket.
final class ConnectionWatch: Sendable {
    /// Per connection, in libmicrohttpd's `socket_context`.
    final class Entry: Sendable {
        let socket: Int32
        /// Uptime nanoseconds by which the headers must be in; 0 while a request is being served.
        let deadline: Atomic<UInt64>
        /// Set when an answer was queued with the request's body still arriving: the connection
        /// is drained before it is closed (``LingeringClose``).
        let linger = Atomic<Bool>(false)
        /// The peer's address as text, written once per connection rather than once per request.
        let peer: String

        init(socket: Int32, deadline: UInt64, peer: String) {
            self.socket = socket
            self.deadline = Atomic(deadline)
            self.peer = peer
        }
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var running = false
    }

    let headerTimeout: Duration
    private let state = Mutex(State())
    private let wakeup = NSCondition()
    /// Connections closed for overdue headers so far.
    let closedForTimeout = Atomic<Int>(0)

    init(headerTimeout: Duration) {
        self.headerTimeout = headerTimeout
    }

    func opened(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let entry = Entry(
            socket: CMicroHTTPD_socket(connection), deadline: HeaderDeadline.due(after: Self.now(), headerTimeout),
            peer: HTTPServer.address(CMicroHTTPD_clientAddress(connection)))
        context.pointee = Unmanaged.passRetained(entry).toOpaque()
        state.withLock { $0.entries[ObjectIdentifier(entry)] = entry }
    }

    func closed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = context.pointee else { return }
        context.pointee = nil
        let entry = Unmanaged<Entry>.fromOpaque(raw).takeRetainedValue()
        state.withLock { _ = $0.entries.removeValue(forKey: ObjectIdentifier(entry)) }
        // libmicrohttpd closes the socket right after this notification.
        if entry.linger.load(ordering: .relaxed) { LingeringClose.start(socket: entry.socket) }
    }

    /// The answer being queued leaves part of the request's body unread: drain it at the close.
    func lingerOnClose(_ connection: OpaquePointer) {
        entry(connection)?.linger.store(true, ordering: .relaxed)
    }

    func headersReceived(_ connection: OpaquePointer) {
        entry(connection)?.deadline.store(HeaderDeadline.none, ordering: .relaxed)
    }

    func requestCompleted(_ connection: OpaquePointer, idleTimeout: Duration) {
        entry(connection)?.deadline.store(HeaderDeadline.due(after: Self.now(), idleTimeout), ordering: .relaxed)
    }

    /// The connection's peer address, as written when it was accepted.
    func peer(_ connection: OpaquePointer) -> String? { entry(connection)?.peer }

    private func entry(_ connection: OpaquePointer) -> Entry? {
        CMicroHTTPD_socketContext(connection).map { Unmanaged<Entry>.fromOpaque($0).takeUnretainedValue() }
    }

    func start() {
        state.withLock { $0.running = true }
        let thread = Thread { [self] in run() }
        thread.name = "entitled-http-headers"
        thread.start()
    }

    func stop() {
        state.withLock { $0.running = false }
        wakeup.withLock { wakeup.broadcast() }
    }

    private func run() {
        while true {
            wakeup.lock()
            _ = wakeup.wait(until: Date().addingTimeInterval(0.1))
            wakeup.unlock()
            let now = Self.now()
            let running = state.withLock { state -> Bool in
                guard state.running else { return false }
                for entry in state.entries.values {
                    guard HeaderDeadline.isOverdue(entry.deadline.load(ordering: .relaxed), at: now) else { continue }
                    entry.deadline.store(HeaderDeadline.none, ordering: .relaxed)
                    _ = shutdownSocket(entry.socket)
                    closedForTimeout.add(1, ordering: .relaxed)
                }
                return true
            }
            if !running { return }
        }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// A connection's header deadline, in uptime nanoseconds: the instant by which its next request's
/// headers must be in, or ``none`` while a request is being served.
enum HeaderDeadline {
    static let none: UInt64 = 0

    /// `timeout` after `now` (accept, or the end of a response).
    static func due(after now: UInt64, _ timeout: Duration) -> UInt64 {
        let (seconds, attoseconds) = timeout.components
        return now + UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Whether a connection with this deadline is cut at `now`.
    static func isOverdue(_ deadline: UInt64, at now: UInt64) -> Bool { deadline != none && deadline < now }
}

/// `shutdown(2)` both directions: the peer sees the end at once, the descriptor stays open.
func shutdownSocket(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        return Glibc.shutdown(fd, Int32(SHUT_RDWR))
    #else
        return Darwin.shutdown(fd, SHUT_RDWR)
    #endif
}

/// A lingering close: closing a socket with unread input makes the kernel reset the connection,
/// and a reset can destroy an answer the client has not read yet (a refusal sent while the client
/// is still sending its body). So the write side is shut (the answer is followed by FIN) and what
/// the client still sends is read and dropped — until it closes, pauses for ``quietMilliseconds``,
/// or ``maxBytes`` or ``maxMilliseconds`` are reached — before the socket is really closed. The
/// drain runs on a duplicate of the socket, on its own thread, at most ``maxConcurrent`` at once
/// (beyond that the socket is closed at once, as without lingering).
enum LingeringClose {
    static let maxConcurrent = 64
    static let maxBytes = 16 << 20
    static let maxMilliseconds = 5_000
    static let quietMilliseconds: Int32 = 500
    private static let active = Atomic<Int>(0)

    static func start(socket: Int32) {
        guard active.add(1, ordering: .relaxed).newValue <= maxConcurrent else {
            active.subtract(1, ordering: .relaxed)
            return
        }
        let copy = dup(socket)
        guard copy >= 0 else {
            active.subtract(1, ordering: .relaxed)
            return
        }
        _ = shutdown(copy, Int32(SHUT_WR))
        let thread = Thread {
            drain(copy)
            _ = close(copy)
            active.subtract(1, ordering: .relaxed)
        }
        thread.name = "entitled-http-linger"
        thread.start()
    }

    private static func drain(_ socket: Int32) {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(maxMilliseconds))
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var total = 0
        while total < maxBytes && ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, quietMilliseconds) == 1 else { return }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            total += count
        }
    }
}
