internal import CMicroHTTPD
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading a request's parts out of libmicrohttpd (on the poll thread).
extension HTTPServer {
    func collectHeaders(_ connection: OpaquePointer) -> HTTPHeaders { collect(connection, .HEADER_KIND) }

    /// Query parameters (the last value of a repeated name wins) and the names given more than once.
    func collectQuery(_ connection: OpaquePointer) -> (values: [String: String], repeated: Set<String>) {
        var values: [String: String] = [:], repeated = Set<String>()
        // libmicrohttpd leaves them percent-encoded (see PercentDecoding).
        for field in collect(connection, .GET_ARGUMENT_KIND) {
            let name = PercentDecoding.decodeLeniently(field.name)
            if values.updateValue(PercentDecoding.decodeLeniently(field.value), forKey: name) != nil { repeated.insert(name) }
        }
        return (values, repeated)
    }

    private func collect(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> HTTPHeaders {
        let collector = ValueCollector()
        _ = MHD_get_connection_values(connection, kind, collectValue, Unmanaged.passUnretained(collector).toOpaque())
        return collector.values
    }

    func lookup(_ connection: OpaquePointer, kind: MHD_ValueKind, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
    }

    /// The client's `X-Request-Id` when it is short and plain, else a fresh one.
    func requestId(for connection: OpaquePointer) -> String {
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

    /// The peer's address as text ("" when unknown).
    static func address(_ pointer: UnsafePointer<sockaddr>?) -> String {
        guard let pointer else { return "" }
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                IPAddress(bytes: withUnsafeBytes(of: sin.pointee.sin_addr) { Array($0) }).description
            }
        case AF_INET6:
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                IPAddress(bytes: withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) }).description
            }
        default:
            return ""
        }
    }
}

/// Per-request state, owned by libmicrohttpd's `req_cls` slot from the request line (see
/// `requestLineHandler`) to the completion callback.
///
/// `@unchecked Sendable`: the poll thread touches it only between access-handler calls, and the
/// async handler writes `response` before `MHD_resume_connection`, whose internal locking orders
/// that write before the next access-handler call reads it.
final class Exchange: @unchecked Sendable {
    let started = DispatchTime.now().uptimeNanoseconds
    /// Set at the first access-handler call (the headers are in).
    var headersIn = false
    /// The request's admission, body and answer, decided without the socket.
    var logic: RequestExchange
    /// The async handler's answer, queued when the connection is resumed.
    var response: Response?
    var status = 0
    var bytesSent = 0

    init(targetBytes: Int, limits: RequestExchange.Limits) {
        logic = RequestExchange(targetBytes: targetBytes, limits: limits)
    }

    var requestId: String { logic.requestId }
}

/// A connection pointer carried into the handler task. libmicrohttpd allows resuming from any thread.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private final class ValueCollector {
    var values = HTTPHeaders()
}

private func collectValue(
    _ context: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let context, let key else { return .YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
    collector.values.add(String(cString: key), value.map { String(cString: $0) } ?? "")
    return .YES
}

// MARK: - libmicrohttpd callbacks

func accessHandler(
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

func completedHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(
        connection: connection, context: context, code: code.rawValue)
}

/// Called once the request line is parsed, with the raw target: the request's `Exchange` starts
/// here so the target's length as sent (query included) can be checked against `maxURLBytes`.
/// libmicrohttpd then reports the request as completed in every case, which releases it.
func requestLineHandler(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let length = uri.map { strlen($0) } ?? 0
    return Unmanaged.passRetained(Exchange(targetBytes: Int(length), limits: server.exchangeLimits)).toOpaque()
}

func connectionHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let watch = Unmanaged<ConnectionWatch>.fromOpaque(cls).takeUnretainedValue()
    if code == .CONNECTION_NOTIFY_STARTED {
        watch.opened(connection, context: socketContext)
    } else {
        watch.closed(context: socketContext)
    }
}
