internal import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server on libmicrohttpd.
///
/// Threading: libmicrohttpd runs `threads` poll threads (epoll on Linux), each owning a share of
/// the connections. Requests are parsed and bodies streamed on those threads. `.inline` handlers
/// run right there; `.async` handlers run on Swift's cooperative pool while the connection is
/// suspended (`MHD_suspend_connection`), and the response is queued after `MHD_resume_connection`,
/// so a slow handler never stalls a poll thread. Responses are always queued on a later call of
/// the access handler than the first, which keeps keep-alive connections open.
public final class HTTPServer: Sendable {
    /// Limits and listening options. Every default is production-safe.
    public struct Configuration: Sendable {
        /// IPv4 or IPv6 literal, or `localhost`.
        public var host: String = "127.0.0.1"
        /// 0 picks a free port (see `HTTPServer.port`).
        public var port: Int = 8080
        /// Poll threads; defaults to the number of cores.
        public var threads: Int = ProcessInfo.processInfo.activeProcessorCount
        /// Largest accepted request body; beyond it the answer is 413.
        public var maxBodyBytes: Int = 1 << 20
        /// Largest request line plus headers; beyond it the answer is 431.
        public var maxHeaderBytes: Int = 16 * 1024
        /// Longest accepted request target as sent (path and query, before decoding); beyond it
        /// the answer is 414.
        public var maxURLBytes: Int = 8 * 1024
        /// Simultaneous connections; more are refused at accept.
        public var connectionLimit: Int = 4096
        /// Simultaneous connections from one peer IP address (0: no limit); more are refused at
        /// accept. Behind a reverse proxy every connection comes from the proxy's address.
        public var perIPConnectionLimit: Int = 64
        /// A connection idle for this long is closed.
        public var idleTimeoutSeconds: Int = 30
        /// The headers of a connection's first request must be complete this long after accept,
        /// however slowly they trickle in; those of each later request on a keep-alive connection
        /// within `idleTimeoutSeconds` of the previous response. Else the connection is closed.
        public var headerTimeoutSeconds: Int = 5
        /// Peers whose `X-Forwarded-For` names the client (see ``TrustedProxies``).
        public var trustedProxies = TrustedProxies()
        /// How long `shutdown()` waits for in-flight requests.
        public var shutdownGracePeriod: Duration = .seconds(10)
        /// Where JSON-lines access records go; nil disables the access log.
        public var accessLog: LogWriter? = .standardOutput
        /// Where handler errors that became 500s are logged.
        public var errorLog: LogWriter? = .standardError
        /// Called on the poll thread as each request completes (metrics); must be quick.
        public var requestObserver: (@Sendable (CompletedRequest) -> Void)?
        /// Serve HTTPS with these (TLS 1.2 and 1.3 only, see ``TLSCredentials/priorities``); nil: plain HTTP.
        public var tls: TLSCredentials?

        public init() {}
    }

    /// Why the server could not start.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    struct State {
        /// The daemon accepting connections.
        var daemon: DaemonHandle?
        /// Daemons replaced by a TLS reload, finishing the connections they hold (see `reloadTLS`).
        var draining: [DaemonHandle] = []
        /// The flags the daemons were started with.
        var flags: UInt32 = 0
        /// Accepts on the listening socket and deals connections to `daemon`.
        var dealer: ConnectionDealer?
        var stopping = false
        var stopped = false
    }

    public let configuration: Configuration
    let router: Router
    let state = Mutex(State())
    /// The accepting daemon's address (for `queue`, which closes connections of draining ones).
    let currentDaemon = Atomic<UInt>(0)
    let drainingCount = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    let stopping = Atomic<Bool>(false)
    /// Requests whose connection is suspended while their async handler runs.
    let suspended = SuspendedRequests()
    /// Connections whose request headers are still due, for the header deadline.
    let watch: ConnectionWatch
    private let boundPort = Atomic<Int>(0)
    let requestCounter = Atomic<UInt64>(0)
    let requestIdPrefix: String

    public init(configuration: Configuration = Configuration(), router: Router) {
        self.configuration = configuration
        self.router = router
        self.requestIdPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        self.watch = ConnectionWatch(headerTimeout: .seconds(max(1, configuration.headerTimeoutSeconds)))
    }

    /// The port actually bound (differs from the configured one when that was 0).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// The limits each request is admitted and read under (see ``RequestExchange``): an oversized
    /// body is read and dropped up to 4× `maxBodyBytes` (at least 4 MiB) before the connection is
    /// cut instead; a body refused before reading (a route that takes none, a failed admission) up
    /// to 64 KiB, so the answer arrives intact.
    var exchangeLimits: RequestExchange.Limits {
        RequestExchange.Limits(
            maxURLBytes: configuration.maxURLBytes, maxHeaderBytes: configuration.maxHeaderBytes,
            maxBodyBytes: configuration.maxBodyBytes, discardBudget: max(configuration.maxBodyBytes, 1 << 20) * 4,
            refusalDrainBytes: 64 * 1024)
    }

    /// Requests received and not yet completed.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Binds and starts the poll threads.
    public func start() throws(StartError) {
        #if os(Linux)
            let flags = CMicroHTTPD_flagsEpollPool
        #else
            let flags = CMicroHTTPD_flagsPollPool
            signal(SIGPIPE, SIG_IGN)
        #endif
        var storage = sockaddr_storage()
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        guard (1...65535).contains(configuration.port) || configuration.port == 0 else {
            throw StartError(description: "port \(configuration.port) is out of range")
        }
        let port = UInt16(configuration.port)
        let length: socklen_t
        if host.contains(":") {
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            try withUnsafeMutableBytes(of: &storage) { raw throws(StartError) in
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = port.bigEndian
                guard inet_pton(AF_INET6, host, &sin6.pointee.sin6_addr) == 1 else {
                    throw StartError(description: "'\(configuration.host)' is not an IP address")
                }
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            try withUnsafeMutableBytes(of: &storage) { raw throws(StartError) in
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = port.bigEndian
                guard inet_pton(AF_INET, host, &sin.pointee.sin_addr) == 1 else {
                    throw StartError(description: "'\(configuration.host)' is not an IP address")
                }
            }
        }

        if let tls = configuration.tls { try tls.check() }
        // The socket is ours, not a daemon's: libmicrohttpd's epoll threads race the call that
        // takes a listening socket away from them (`MHD_quiesce_daemon`) and abort the process
        // when they lose, so its daemons never get one.
        let listening = withUnsafePointer(to: &storage) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { CMicroHTTPD_listen($0, length, 1024) }
        }
        guard listening >= 0 else {
            throw StartError(
                description: "cannot listen on \(configuration.host):\(configuration.port) (address in use or not permitted)")
        }
        guard let daemon = launch(flags: flags, tls: configuration.tls) else {
            _ = close(listening)
            throw StartError(description: "cannot start the server's threads for \(configuration.host):\(configuration.port)")
        }
        boundPort.store(Int(CMicroHTTPD_boundPort(listening)), ordering: .relaxed)
        watch.start()
        // Keep self alive while libmicrohttpd holds the unretained pointer; released in shutdown().
        _ = Unmanaged.passRetained(self)
        currentDaemon.store(Self.bits(daemon.pointer), ordering: .relaxed)
        let dealer = ConnectionDealer(socket: listening, server: self)
        state.withLock {
            $0.daemon = daemon
            $0.flags = flags
            $0.dealer = dealer
        }
        dealer.start()
    }

    /// Stops accepting connections, waits (bounded by `shutdownGracePeriod`) for in-flight requests,
    /// answers the requests whose handlers are still running 503 `SHUTTING_DOWN` (with
    /// `Retry-After`), then stops the threads. Idempotent.
    public func shutdown() async {
        let handles: (DaemonHandle, [DaemonHandle], ConnectionDealer?)? = state.withLock { state in
            guard !state.stopping, let daemon = state.daemon else { return nil }
            state.stopping = true
            defer { state.draining = [] }
            return (daemon, state.draining, state.dealer)
        }
        guard let (handle, draining, dealer) = handles else { return }
        stopping.store(true, ordering: .relaxed)
        // Shutting the listening socket down wakes the dealer for good and resets queued
        // connections at once, so clients see a refusal instead of hanging. It is closed after
        // MHD_stop_daemon, once the dealer's thread has returned (``ConnectionDealer/closeWhenEnded()``).
        dealer?.stop()
        await waitForInFlight(upTo: configuration.shutdownGracePeriod)
        // libmicrohttpd aborts in MHD_stop_daemon while a connection is suspended, and a handler
        // may never finish (e.g. blocked on a frozen database): answer those requests ourselves.
        for request in suspended.drain() {
            request.exchange.response = HTTPError.shuttingDown.response(requestId: request.exchange.requestId)
            MHD_resume_connection(request.connection.pointer)
            request.task?.cancel()
        }
        await waitForInFlight(upTo: .seconds(2))
        watch.stop()
        for old in draining { old.stop() }
        handle.stop()
        await dealer?.closeWhenEnded()
        state.withLock { state in
            state.stopped = true
            state.daemon = nil
        }
        configuration.accessLog?.flush()
        configuration.errorLog?.flush()
        Unmanaged.passUnretained(self).release()
    }

    private func waitForInFlight(upTo duration: Duration) async {
        let deadline = ContinuousClock.now.advanced(by: duration)
        while inFlight.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: - Request handling (called on libmicrohttpd threads)

    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let exchange: Exchange
        if let existing = context.pointee {
            exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()
        } else {
            // The request-line callback always sets one; this is only a fallback.
            exchange = Exchange(targetBytes: 0, limits: exchangeLimits)
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
        }
        if !exchange.headersIn {
            // First call: headers are in, no body byte has been read.
            exchange.headersIn = true
            inFlight.add(1, ordering: .relaxed)
            watch.headersReceived(connection)
            let head = RequestExchange.Head(
                method: HTTPMethod(method.map { String(cString: $0) } ?? "GET"), path: url.map { String(cString: $0) } ?? "/",
                requestId: requestId(for: connection), headers: collectHeaders(connection),
                peer: watch.peer(connection) ?? Self.address(CMicroHTTPD_clientAddress(connection)),
                headerBytes: CMicroHTTPD_requestHeaderSize(connection), query: { self.collectQuery(connection) })
            let step = exchange.logic.admit(head, router: router, trustedProxies: configuration.trustedProxies) {
                self.errorResponse($0, request: $1)
            }
            if exchange.logic.lingers { watch.lingerOnClose(connection) }
            return perform(step, on: connection, exchange: exchange)
        }
        if let response = exchange.response {
            // Resumed after an async handler finished.
            exchange.response = nil
            return queue(response, on: connection, exchange: exchange)
        }
        let count = uploadSize.pointee
        guard count == 0 else {
            let step =
                uploadData.map { data in
                    data.withMemoryRebound(to: UInt8.self, capacity: count) {
                        exchange.logic.receive(UnsafeBufferPointer(start: $0, count: count))
                    }
                } ?? exchange.logic.receive(UnsafeBufferPointer(start: nil, count: 0))
            if case .proceed = step { uploadSize.pointee = 0 }
            if exchange.logic.lingers { watch.lingerOnClose(connection) }
            return perform(step, on: connection, exchange: exchange)
        }
        // Final call: the whole request is here.
        return perform(exchange.logic.complete(), on: connection, exchange: exchange)
    }

    /// Does what the exchange decided: reads on, queues an answer, or runs the handler.
    private func perform(_ step: RequestExchange.Step, on connection: OpaquePointer, exchange: Exchange) -> MHD_Result {
        switch step {
        case .proceed:
            return .YES
        case .answer(let response):
            return queue(response, on: connection, exchange: exchange)
        case .run(.inline(let body), let request):
            let response: Response
            do {
                response = try body(request)
            } catch {
                response = errorResponse(error, request: request)
            }
            return queue(response, on: connection, exchange: exchange)
        case .run(.async(let body), let request):
            return suspend(connection, exchange: exchange, request: request, body)
        case .run(.inlineFirst(let fast, let slow), let request):
            do {
                if let response = try fast(request) { return queue(response, on: connection, exchange: exchange) }
            } catch {
                return queue(errorResponse(error, request: request), on: connection, exchange: exchange)
            }
            return suspend(connection, exchange: exchange, request: request, slow)
        }
    }

    /// Suspends the connection while `body` runs on Swift's pool; the answer is queued on resume.
    /// Once shutdown has answered the suspended requests, a new one is answered 503 at once.
    private func suspend(
        _ connection: OpaquePointer, exchange: Exchange, request: Request,
        _ body: @escaping @Sendable (Request) async throws -> Response
    ) -> MHD_Result {
        let handle = ConnectionHandle(pointer: connection)
        let entry = SuspendedRequests.Entry(connection: handle, exchange: exchange)
        let admitted = suspended.insert(entry) {
            MHD_suspend_connection(connection)
            return Task {
                let response: Response
                do {
                    response = try await body(request)
                } catch {
                    response = self.errorResponse(error, request: request)
                }
                // Shutdown may have answered (and resumed) it already; then this answer is dropped.
                guard self.suspended.remove(entry) else { return }
                exchange.response = response
                MHD_resume_connection(handle.pointer)
            }
        }
        guard admitted else {
            return queue(HTTPError.shuttingDown.response(requestId: exchange.requestId), on: connection, exchange: exchange)
        }
        return .YES
    }

    func completed(
        connection: OpaquePointer?, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, code: UInt32
    ) {
        if let connection { watch.requestCompleted(connection, idleTimeout: .seconds(configuration.idleTimeoutSeconds)) }
        guard let context, let raw = context.pointee else { return }
        context.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
        // Requests that never reached the access handler (libmicrohttpd refused them while
        // parsing) were not counted and are not logged.
        guard exchange.headersIn else { return }
        inFlight.subtract(1, ordering: .relaxed)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - exchange.started) / 1_000_000
        configuration.requestObserver?(
            CompletedRequest(
                method: exchange.logic.method, route: exchange.logic.route, status: exchange.status, seconds: elapsed / 1000))
        guard let log = configuration.accessLog, var line = log.record(.info, type: "access") else { return }
        line.add("requestId", exchange.requestId)
        line.add("method", exchange.logic.method.rawValue)
        line.add("path", exchange.logic.path)
        line.add("status", exchange.status)
        line.add("bytes", exchange.bytesSent)
        line.add("durationMs", elapsed)
        if !exchange.logic.remoteAddress.isEmpty { line.add("remote", exchange.logic.remoteAddress) }
        if code != 0 { line.add("terminated", Self.terminationReason(code)) }
        log.write(line)
    }

    private static func terminationReason(_ code: UInt32) -> String {
        switch code {
        case 1: "error"
        case 2: "timeout"
        case 3: "shutdown"
        case 4: "readError"
        case 5: "clientAbort"
        default: "code\(code)"
        }
    }

    private func queue(_ response: Response, on connection: OpaquePointer, exchange: Exchange) -> MHD_Result {
        let mhdResponse: OpaquePointer? = response.body.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(
                raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers {
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        _ = MHD_add_response_header(mhdResponse, "X-Request-Id", exchange.requestId)
        // Every answer is what its Content-Type says: a browser must not guess another type.
        if response.headers["X-Content-Type-Options"] == nil {
            _ = MHD_add_response_header(mhdResponse, "X-Content-Type-Options", "nosniff")
        }
        if exchange.logic.closeAfter || stopping.load(ordering: .relaxed) || isDraining(connection) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        exchange.status = response.status
        exchange.bytesSent = response.body.count
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    func errorResponse(_ error: any Error, request: Request) -> Response {
        if let error = error as? any HTTPResponseError {
            return error.response(requestId: request.requestId)
        }
        if let log = configuration.errorLog, var line = log.record(.error, type: "error") {
            line.add("requestId", request.requestId)
            line.add("path", request.path)
            line.add("error", String(describing: type(of: error)))
            log.write(line)
        }
        return HTTPError.internalError.response(requestId: request.requestId)
    }
}
