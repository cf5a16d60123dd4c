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
        /// Largest request line plus headers; beyond it libmicrohttpd answers 431.
        public var maxHeaderBytes: Int = 16 * 1024
        /// Longest accepted URL (path and query); beyond it the answer is 414.
        public var maxURLBytes: Int = 8 * 1024
        /// Simultaneous connections; more are refused at accept.
        public var connectionLimit: Int = 4096
        /// Simultaneous connections from one IP address (0: no limit).
        public var perIPConnectionLimit: Int = 0
        /// A connection idle (or trickling) for this long is closed.
        public var idleTimeoutSeconds: Int = 30
        /// How long `shutdown()` waits for in-flight requests.
        public var shutdownGracePeriod: Duration = .seconds(10)
        /// Where JSON-lines access records go; nil disables the access log.
        public var accessLog: LogWriter? = .standardOutput
        /// Where handler errors that became 500s are logged.
        public var errorLog: LogWriter? = .standardError

        public init() {}
    }

    /// Why the server could not start.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    private struct State {
        var daemon: DaemonHandle?
        var listenSocket: Int32 = -1
        var stopping = false
        var stopped = false
        var flusher: Task<Void, Never>?
    }

    public let configuration: Configuration
    let router: Router
    private let state = Mutex(State())
    private let inFlight = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let boundPort = Atomic<Int>(0)
    private let requestCounter = Atomic<UInt64>(0)
    private let requestIdPrefix: String

    public init(configuration: Configuration = Configuration(), router: Router) {
        self.configuration = configuration
        self.router = router
        self.requestIdPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// The port actually bound (differs from the configured one when that was 0).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// How much of an oversized body is read and dropped before the connection is cut instead.
    private var discardBudget: Int { max(configuration.maxBodyBytes, 1 << 20) * 4 }

    /// Requests received and not yet completed.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Binds and starts the poll threads.
    public func start() throws(StartError) {
        #if os(Linux)
            var flags = CMicroHTTPD_flagsEpollPool
        #else
            var flags = CMicroHTTPD_flagsPollPool
            signal(SIGPIPE, SIG_IGN)
        #endif
        var storage = sockaddr_storage()
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        guard (1...65535).contains(configuration.port) || configuration.port == 0 else {
            throw StartError(description: "port \(configuration.port) is out of range")
        }
        let port = UInt16(configuration.port)
        if host.contains(":") {
            flags |= CMicroHTTPD_flagIPv6
            try withUnsafeMutableBytes(of: &storage) { raw throws(StartError) in
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = port.bigEndian
                guard inet_pton(AF_INET6, host, &sin6.pointee.sin6_addr) == 1 else {
                    throw StartError(description: "'\(configuration.host)' is not an IP address")
                }
            }
        } else {
            try withUnsafeMutableBytes(of: &storage) { raw throws(StartError) in
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = port.bigEndian
                guard inet_pton(AF_INET, host, &sin.pointee.sin_addr) == 1 else {
                    throw StartError(description: "'\(configuration.host)' is not an IP address")
                }
            }
        }

        let daemon: OpaquePointer? = withUnsafePointer(to: &storage) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                var options = CMicroHTTPD_Options(
                    flags: flags,
                    bindAddress: sockaddrPointer,
                    port: port,
                    threadPoolSize: UInt32(max(1, configuration.threads)),
                    connectionLimit: UInt32(max(1, configuration.connectionLimit)),
                    perIPConnectionLimit: UInt32(max(0, configuration.perIPConnectionLimit)),
                    connectionTimeoutSeconds: UInt32(max(1, configuration.idleTimeoutSeconds)),
                    // The pool holds the request line and headers plus read/write buffers.
                    connectionMemoryLimit: configuration.maxHeaderBytes + 16 * 1024,
                    listenBacklog: 1024,
                    strictForClient: 1)
                let context = Unmanaged.passUnretained(self).toOpaque()
                return CMicroHTTPD_start(&options, accessHandler, context, completedHandler, context)
            }
        }
        guard let daemon else {
            throw StartError(
                description: "cannot listen on \(configuration.host):\(configuration.port) (address in use or not permitted)")
        }
        boundPort.store(Int(CMicroHTTPD_boundPort(daemon)), ordering: .relaxed)
        let flusher: Task<Void, Never>? = configuration.accessLog.map { log in
            Task.detached {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(200))
                    log.flush()
                }
            }
        }
        // Keep self alive while libmicrohttpd holds the unretained pointer; released in shutdown().
        _ = Unmanaged.passRetained(self)
        let handle = DaemonHandle(pointer: daemon)
        state.withLock {
            $0.daemon = handle
            $0.flusher = flusher
        }
    }

    /// Stops accepting connections, waits (bounded) for in-flight requests, then stops the threads.
    /// Idempotent.
    public func shutdown() async {
        let handle: DaemonHandle? = state.withLock { state in
            guard !state.stopping, let daemon = state.daemon else { return nil }
            state.stopping = true
            return daemon
        }
        guard let daemon = handle?.pointer else { return }
        stopping.store(true, ordering: .relaxed)
        let listenSocket = MHD_quiesce_daemon(daemon)
        if listenSocket >= 0 {
            // libmicrohttpd no longer polls it; shutting it down resets queued connections at once
            // so clients see a refusal instead of hanging. It is closed after MHD_stop_daemon.
            _ = Glibc_or_Darwin_shutdown(listenSocket)
        }
        let deadline = ContinuousClock.now.advanced(by: configuration.shutdownGracePeriod)
        while inFlight.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        MHD_stop_daemon(daemon)
        if listenSocket >= 0 { close(listenSocket) }
        let flusher = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            state.daemon = nil
            return state.flusher
        }
        flusher?.cancel()
        configuration.accessLog?.flush()
        Unmanaged.passUnretained(self).release()
    }

    // MARK: - Request handling (called on libmicrohttpd threads)

    fileprivate func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let existing = context.pointee else {
            // First call: headers are in. Never queue a response here (it would close keep-alive).
            let exchange = Exchange(
                method: HTTPMethod(method.map { String(cString: $0) } ?? "GET"),
                path: url.map { String(cString: $0) } ?? "/")
            exchange.requestId = requestId(for: connection)
            if exchange.path.utf8.count > configuration.maxURLBytes {
                exchange.rejection = .uriTooLong(limit: configuration.maxURLBytes)
            } else if let length = lookup(connection, kind: .HEADER_KIND, "Content-Length"),
                let declared = Int(length), declared > configuration.maxBodyBytes
            {
                exchange.rejection = .payloadTooLarge(limit: configuration.maxBodyBytes)
            }
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
            inFlight.add(1, ordering: .relaxed)
            if let rejection = exchange.rejection,
                lookup(connection, kind: .HEADER_KIND, "Expect")?.lowercased() == "100-continue"
            {
                // The client waits for "100 Continue" before sending the body: refuse now (this
                // closes the connection, which is right: the body will never be read).
                return queue(rejection.response(requestId: exchange.requestId), on: connection, exchange: exchange)
            }
            return .YES
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()

        if let response = exchange.response {
            // Resumed after an async handler finished.
            exchange.response = nil
            return queue(response, on: connection, exchange: exchange)
        }
        if let rejection = exchange.rejection {
            // Read and discard a moderately oversized body so the answer arrives intact (closing
            // with unread input makes the kernel send RST, and clients lose the response); past
            // the discard budget, answer at once and let libmicrohttpd close the connection.
            let count = uploadSize.pointee
            if count == 0 {
                return queue(rejection.response(requestId: exchange.requestId), on: connection, exchange: exchange)
            }
            exchange.discarded += count
            if exchange.discarded > discardBudget {
                return queue(rejection.response(requestId: exchange.requestId), on: connection, exchange: exchange)
            }
            uploadSize.pointee = 0
            return .YES
        }
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            if exchange.body.count + count > configuration.maxBodyBytes {
                exchange.rejection = .payloadTooLarge(limit: configuration.maxBodyBytes)
                exchange.discarded = exchange.body.count + count
                exchange.body = []
                uploadSize.pointee = 0
                return .YES
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                    exchange.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            }
            uploadSize.pointee = 0
            return .YES
        }

        // Final call: the whole request is here.
        let request = makeRequest(connection: connection, exchange: exchange)
        switch router.match(exchange.method, exchange.path) {
        case .notFound:
            return queue(
                HTTPError.notFound("no route for \(exchange.path)").response(requestId: exchange.requestId),
                on: connection, exchange: exchange)
        case .methodNotAllowed(let allow):
            return queue(
                HTTPError.methodNotAllowed(allow: allow).response(requestId: exchange.requestId), on: connection,
                exchange: exchange)
        case .found(let handler, let parameters):
            var request = request
            request.pathParameters = parameters
            switch handler {
            case .inline(let body):
                let response: Response
                do {
                    response = try body(request)
                } catch {
                    response = errorResponse(error, request: request)
                }
                return queue(response, on: connection, exchange: exchange)
            case .async(let body):
                return suspend(connection, exchange: exchange, request: request, body)
            case .inlineFirst(let fast, let slow):
                do {
                    if let response = try fast(request) { return queue(response, on: connection, exchange: exchange) }
                } catch {
                    return queue(errorResponse(error, request: request), on: connection, exchange: exchange)
                }
                return suspend(connection, exchange: exchange, request: request, slow)
            }
        }
    }

    /// Suspends the connection while `body` runs on Swift's pool; the answer is queued on resume.
    private func suspend(
        _ connection: OpaquePointer, exchange: Exchange, request: Request,
        _ body: @escaping @Sendable (Request) async throws -> Response
    ) -> MHD_Result {
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(pointer: connection)
        Task {
            let response: Response
            do {
                response = try await body(request)
            } catch {
                response = self.errorResponse(error, request: request)
            }
            exchange.response = response
            MHD_resume_connection(handle.pointer)
        }
        return .YES
    }

    fileprivate func completed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, code: UInt32) {
        guard let context, let raw = context.pointee else { return }
        context.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
        inFlight.subtract(1, ordering: .relaxed)
        guard let log = configuration.accessLog else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - exchange.started) / 1_000_000
        var line = JSONLine()
        line.add("time", ISO8601.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
        line.add("type", "access")
        line.add("requestId", exchange.requestId)
        line.add("method", exchange.method.rawValue)
        line.add("path", exchange.path)
        line.add("status", exchange.status)
        line.add("bytes", exchange.bytesSent)
        line.add("durationMs", elapsed)
        if !exchange.remoteAddress.isEmpty { line.add("remote", exchange.remoteAddress) }
        if code != 0 { line.add("terminated", Self.terminationReason(code)) }
        log.write(line: line.finish())
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
        if stopping.load(ordering: .relaxed) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        exchange.status = response.status
        exchange.bytesSent = response.body.count
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    private func errorResponse(_ error: any Error, request: Request) -> Response {
        if let error = error as? any HTTPResponseError {
            return error.response(requestId: request.requestId)
        }
        if let log = configuration.errorLog {
            var line = JSONLine()
            line.add("type", "error")
            line.add("requestId", request.requestId)
            line.add("path", request.path)
            line.add("error", String(describing: type(of: error)))
            log.write(line: line.finish())
        }
        return HTTPError.internalError.response(requestId: request.requestId)
    }

    private func makeRequest(connection: OpaquePointer, exchange: Exchange) -> Request {
        let headers = HeaderCollector()
        let box = Unmanaged.passUnretained(headers).toOpaque()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, collectHeader, box)
        let query = QueryCollector()
        _ = MHD_get_connection_values(
            connection, .GET_ARGUMENT_KIND, collectQuery, Unmanaged.passUnretained(query).toOpaque())
        exchange.remoteAddress = Self.address(CMicroHTTPD_clientAddress(connection))
        return Request(
            method: exchange.method, path: exchange.path, query: query.values, headers: headers.headers,
            body: exchange.body, remoteAddress: exchange.remoteAddress, requestId: exchange.requestId)
    }

    private func lookup(_ connection: OpaquePointer, kind: MHD_ValueKind, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
    }

    /// The client's `X-Request-Id` when it is short and plain, else a fresh one.
    private func requestId(for connection: OpaquePointer) -> String {
        if let given = lookup(connection, kind: .HEADER_KIND, "X-Request-Id"), given.utf8.count <= 128,
            !given.isEmpty, given.utf8.allSatisfy(Self.isRequestIdByte)
        {
            return given
        }
        let n = requestCounter.add(1, ordering: .relaxed).newValue
        return requestIdPrefix + "-" + String(n, radix: 16)
    }

    private static func isRequestIdByte(_ byte: UInt8) -> Bool {
        let lower = byte | 0x20
        return (byte >= 48 && byte <= 57) || (lower >= 97 && lower <= 122) || byte == 45 || byte == 95 || byte == 46
    }

    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func address(_ pointer: UnsafePointer<sockaddr>?) -> String {
        guard let pointer else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var address = sin.pointee.sin_addr
                guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
                return Self.string(buffer)
            }
        case AF_INET6:
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var address = sin6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
                return Self.string(buffer)
            }
        default:
            return ""
        }
    }
}

/// Per-request state, owned by libmicrohttpd's `req_cls` slot from the first access-handler call
/// to the completion callback.
///
/// `@unchecked Sendable`: the poll thread touches it only between access-handler calls, and the
/// async handler writes `response` before `MHD_resume_connection`, whose internal locking orders
/// that write before the next access-handler call reads it.
private final class Exchange: @unchecked Sendable {
    let method: HTTPMethod
    let path: String
    let started = DispatchTime.now().uptimeNanoseconds
    var requestId = ""
    var remoteAddress = ""
    var body: [UInt8] = []
    var rejection: HTTPError?
    var response: Response?
    var status = 0
    var bytesSent = 0
    var discarded = 0

    init(method: HTTPMethod, path: String) {
        self.method = method
        self.path = path
    }
}

/// The daemon pointer, kept in the server's locked state.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A connection pointer carried into the handler task. libmicrohttpd allows resuming from any thread.
private struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private final class HeaderCollector {
    var headers = HTTPHeaders()
}

private final class QueryCollector {
    var values: [String: String] = [:]
}

private func collectHeader(
    _ context: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let context, let key else { return .YES }
    let collector = Unmanaged<HeaderCollector>.fromOpaque(context).takeUnretainedValue()
    collector.headers.add(String(cString: key), value.map { String(cString: $0) } ?? "")
    return .YES
}

private func collectQuery(
    _ context: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let context, let key else { return .YES }
    let collector = Unmanaged<QueryCollector>.fromOpaque(context).takeUnretainedValue()
    // libmicrohttpd leaves them percent-encoded (see PercentDecoding).
    collector.values[PercentDecoding.decodeLeniently(String(cString: key))] =
        value.map { PercentDecoding.decodeLeniently(String(cString: $0)) } ?? ""
    return .YES
}

private func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadSize, let context else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handle(
        connection: connection, url: url, method: method, uploadData: uploadData, uploadSize: uploadSize,
        context: context)
}

private func completedHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(context: context, code: code.rawValue)
}

private func Glibc_or_Darwin_shutdown(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        return Glibc.shutdown(fd, Int32(SHUT_RDWR))
    #else
        return Darwin.shutdown(fd, SHUT_RDWR)
    #endif
}
