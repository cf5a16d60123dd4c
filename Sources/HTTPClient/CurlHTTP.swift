internal import CCurl
import Foundation
import Synchronization

/// ``OutboundHTTP`` on libcurl's easy interface: the server's one outbound HTTP client.
///
/// What an endpoint answers cannot be turned against the server:
/// - the body streams into memory and the transfer ends as soon as it passes ``maxResponseBytes``
///   (headers: ``maxHeaderBytes``), whatever `Content-Length` or chunking claim;
/// - `OutboundRequest.timeoutSeconds` is a total deadline that ends the transfer, however slowly
///   the bytes trickle in; connecting has its own, shorter deadline;
/// - redirects are never followed (a 3xx is returned as the response), only `http` and `https`
///   are spoken, and bodies are never decompressed.
///
/// Each transfer blocks a thread of its own, never one of Swift's cooperative pool; cancelling the
/// caller's task ends the transfer within about a second. Idle handles are kept (up to
/// ``maxIdleHandles``) so that their connections and TLS sessions are reused.
public final class CurlHTTP: OutboundHTTP {
    /// The largest response body accepted.
    public let maxResponseBytes: Int
    /// The largest response header block accepted.
    public let maxHeaderBytes: Int
    /// Seconds to establish a connection (TLS included), within the request's own deadline.
    public let connectTimeoutSeconds: Double
    /// A PEM file of trusted certificate authorities instead of the system's trust store.
    public let caFile: String?
    /// Easy handles kept for reuse.
    public static let maxIdleHandles = 16

    private let idle = Mutex<[EasyHandle]>([])

    /// - Parameters:
    ///   - maxResponseBytes: the largest body accepted (default 8 MiB).
    ///   - maxHeaderBytes: the largest header block accepted (default 64 KiB).
    ///   - connectTimeoutSeconds: the deadline for connecting (default 10 s).
    ///   - caFile: trusted authorities (PEM) replacing the system's, or nil.
    public init(maxResponseBytes: Int = 8 << 20, maxHeaderBytes: Int = 64 << 10, connectTimeoutSeconds: Double = 10, caFile: String? = nil) {
        _ = curlInitialized
        self.maxResponseBytes = maxResponseBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.caFile = caFile
    }

    deinit {
        for handle in idle.withLock({ $0 }) { curl_easy_cleanup(handle.pointer) }
    }

    public func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        try Self.validate(request)
        let transfer = Transfer(request: request, maxBody: maxResponseBytes, maxHeaders: maxHeaderBytes)
        let result: Result<OutboundResponse, OutboundHTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // A thread of its own: `curl_easy_perform` blocks until the transfer ends.
                let thread = Thread { continuation.resume(returning: self.perform(transfer)) }
                thread.name = "entitled-http"
                thread.start()
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    /// Refuses what libcurl must never see: another scheme, header text that would split a line.
    static func validate(_ request: OutboundRequest) throws(OutboundHTTPError) {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https", request.url.host != nil else {
            throw OutboundHTTPError(message: "only http and https URLs are called", kind: .invalidRequest)
        }
        let method = request.method.utf8
        guard !method.isEmpty, method.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw OutboundHTTPError(message: "invalid method \(request.method)", kind: .invalidRequest)
        }
        for (name, value) in request.headers {
            let badName = name.isEmpty || name.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 >= 0x7F }
            guard !badName, !value.utf8.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }) else {
                throw OutboundHTTPError(message: "invalid header \(name)", kind: .invalidRequest)
            }
        }
    }

    /// Runs one transfer on the calling (dedicated) thread.
    private func perform(_ transfer: Transfer) -> Result<OutboundResponse, OutboundHTTPError> {
        guard let handle = idle.withLock({ $0.popLast() }) ?? curl_easy_init().map(EasyHandle.init) else {
            return .failure(OutboundHTTPError(message: "libcurl could not start a transfer"))
        }
        let request = transfer.request
        var lines: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            lines = curl_slist_append(lines, "\(name): \(value)")
        }
        // Never wait for a `100 Continue` first: the bodies are small and the wait is dead time.
        if !request.headers.keys.contains(where: { $0.lowercased() == "expect" }) { lines = curl_slist_append(lines, "Expect:") }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CCurl_errorBufferSize)
        errorBuffer.initialize(repeating: 0, count: CCurl_errorBufferSize)
        defer {
            curl_slist_free_all(lines)
            errorBuffer.deallocate()
        }
        let deadline = max(Int(request.timeoutSeconds * 1000), 1)
        let code: CURLcode = request.url.absoluteString.withCString { url in
            request.method.withCString { method in
                withOptionalCString(caFile) { caFile in
                    (request.body ?? []).withUnsafeBufferPointer { body in
                        var settings = CCurl_Transfer(
                            url: url, method: method, body: body.baseAddress, bodyLength: body.count, headers: lines,
                            timeoutMilliseconds: deadline, connectTimeoutMilliseconds: min(max(Int(connectTimeoutSeconds * 1000), 1), deadline),
                            caFile: caFile, maxFileSize: curl_off_t(maxResponseBytes), errorBuffer: errorBuffer,
                            write: { data, size, count, context in
                                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveBody(data, size * count) ? size * count : 0
                            },
                            header: { data, size, count, context in
                                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveHeader(data, size * count) ? size * count : 0
                            },
                            progress: { context, _, _, _, _ in
                                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().isCancelled ? 1 : 0
                            },
                            context: Unmanaged.passUnretained(transfer).toOpaque())
                        let configured = CCurl_configure(handle.pointer, &settings)
                        guard configured == CURLE_OK else { return configured }
                        return curl_easy_perform(handle.pointer)
                    }
                }
            }
        }
        let status = CCurl_responseCode(handle.pointer)
        // Forget this transfer's pointers (callbacks, buffers); the connection cache stays.
        curl_easy_reset(handle.pointer)
        let kept = idle.withLock { handles in
            guard handles.count < Self.maxIdleHandles else { return false }
            handles.append(handle)
            return true
        }
        if !kept { curl_easy_cleanup(handle.pointer) }
        return transfer.result(code: code, status: status, detail: String(cString: errorBuffer), maxBody: maxResponseBytes)
    }
}

/// libcurl's global state, set up once before the first handle.
private let curlInitialized: Bool = CCurl_globalInit() == CURLE_OK

/// An easy handle; used by one thread at a time (taken from and returned to the idle list).
private struct EasyHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}

/// One transfer's state, written by libcurl's callbacks on the transfer's thread.
private final class Transfer: @unchecked Sendable {
    // `body`, `headers`, `headerBytes` and `overflow` are touched only by the transfer's thread
    // (callbacks, then `result`); `cancelled` by any thread.
    let request: OutboundRequest
    let maxBody: Int
    let maxHeaders: Int
    private var body: [UInt8] = []
    private var headers: [String: String] = [:]
    private var headerBytes = 0
    private var overflow = false
    private let cancelled = Atomic<Bool>(false)

    init(request: OutboundRequest, maxBody: Int, maxHeaders: Int) {
        self.request = request
        self.maxBody = maxBody
        self.maxHeaders = maxHeaders
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Appends a piece of the body; false (ending the transfer) once the cap would be passed.
    func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Bool {
        guard !isCancelled else { return false }
        guard body.count + count <= maxBody else {
            overflow = true
            return false
        }
        if let data, count > 0 {
            body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        }
        return true
    }

    /// Records one header line; a status line starts a new response (after a `100 Continue`).
    func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Bool {
        headerBytes += count
        guard headerBytes <= maxHeaders else {
            overflow = true
            return false
        }
        guard let data else { return true }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]
            return true
        }
        guard let colon = line.firstIndex(of: ":") else { return true }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        headers[name] = headers[name].map { $0 + ", " + value } ?? value
        return true
    }

    func result(code: CURLcode, status: Int, detail: String, maxBody: Int) -> Result<OutboundResponse, OutboundHTTPError> {
        if code == CURLE_OK { return .success(OutboundResponse(status: status, headers: headers, body: body)) }
        let seconds = request.timeoutSeconds
        if overflow || code == CURLE_FILESIZE_EXCEEDED {
            return .failure(OutboundHTTPError(message: "response too large: more than \(maxBody) bytes", kind: .tooLarge))
        }
        if isCancelled { return .failure(OutboundHTTPError(message: "cancelled", kind: .cancelled)) }
        if code == CURLE_OPERATION_TIMEDOUT {
            return .failure(OutboundHTTPError(message: "no complete response within \(seconds) s", kind: .timedOut))
        }
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT {
            return .failure(OutboundHTTPError(message: text, kind: .invalidRequest))
        }
        return .failure(OutboundHTTPError(message: text))
    }
}
