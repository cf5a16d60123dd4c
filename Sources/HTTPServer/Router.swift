/// How a route's handler runs.
public enum Handler: Sendable {
    /// Runs on the poll thread that received the request: only for fast, non-blocking work
    /// (health checks, cached reads). Avoids the suspend/resume round trip.
    case inline(@Sendable (Request) throws -> Response)
    /// Runs on Swift's cooperative pool; the connection is suspended meanwhile, so the poll
    /// threads keep serving other connections however long it takes.
    case async(@Sendable (Request) async throws -> Response)
    /// Tries `fast` on the poll thread (same rules as `inline`); when it answers nil, runs `slow`
    /// as an `async` handler. For reads that are usually served from something ready (a rendered
    /// answer) but sometimes need real work.
    case inlineFirst(fast: @Sendable (Request) throws -> Response?, slow: @Sendable (Request) async throws -> Response)
}

/// A check that runs when a request's headers are in, before any byte of its body is read: throw
/// (an ``HTTPResponseError``, e.g. a 401) to refuse the request without reading or buffering its
/// body. It sees method, path, query, headers, path parameters and the client address; `body` is
/// empty. It runs on the poll thread, so like an `.inline` handler it must be fast and non-blocking.
public typealias Admission = @Sendable (Request) throws -> Void

/// Maps (method, path) to a handler. Patterns are literal segments and `{name}` parameters,
/// e.g. `/v1/customers/{appUserId}/history`. Built before the server starts, then read-only.
public struct Router: Sendable {
    struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var segments: [Segment]
        var handler: Handler
        /// Whether a request body is accepted at all; without it a body is refused before it is read.
        var takesBody: Bool
        var admit: Admission?
    }

    /// What the server needs of a matched route.
    enum Resolution {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allow: [HTTPMethod])
        case notFound
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The outcome of matching a request.
    public enum Match: Sendable {
        case found(Handler, parameters: [String: String])
        case methodNotAllowed(allow: [HTTPMethod])
        case notFound
    }

    private var routes: [Route] = []
    /// The indices of `routes` by segment count, in registration order: a path can only bind to
    /// routes with as many segments as it has (``resolveByScan(_:_:)`` tries those alone).
    private var routesBySegmentCount: [Int: [Int]] = [:]
    /// The same routes by their segments: what a request walks (``resolve(_:_:)``).
    private var tree = RouteTree()

    public init() {}

    /// Every registered (method, pattern), in registration order (used to check the OpenAPI spec).
    public var registeredRoutes: [(method: HTTPMethod, pattern: String)] {
        routes.map { ($0.method, $0.pattern) }
    }

    /// Registers a handler. A second registration of the same method and pattern is a programming error.
    ///
    /// - Parameters:
    ///   - takesBody: whether the route reads a request body; a request with one (`Content-Length`
    ///     above 0 or chunked) on a route that takes none is refused with 413 `BODY_NOT_ALLOWED`
    ///     before its body is read. Defaults to true for `POST`, `PUT` and `PATCH`.
    ///   - admit: checked before the body is read (see ``Admission``).
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, _ handler: Handler, takesBody: Bool? = nil, admit: Admission? = nil
    ) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        precondition(
            !routes.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        let takesBody = takesBody ?? [HTTPMethod.post, .put, .patch].contains(method)
        routesBySegmentCount[segments.count, default: []].append(routes.count)
        tree.insert(segments, route: routes.count)
        routes.append(
            Route(method: method, pattern: pattern, segments: segments, handler: handler, takesBody: takesBody, admit: admit))
    }

    public mutating func get(_ pattern: String, _ handler: @escaping @Sendable (Request) async throws -> Response) {
        add(.get, pattern, .async(handler))
    }

    /// A `GET` route served by `fast` on the poll thread when it can, else by `slow` (see ``Handler/inlineFirst(fast:slow:)``).
    public mutating func get(
        _ pattern: String, fast: @escaping @Sendable (Request) throws -> Response?,
        _ slow: @escaping @Sendable (Request) async throws -> Response
    ) {
        add(.get, pattern, .inlineFirst(fast: fast, slow: slow))
    }

    /// A `POST` route; `admit` runs before its body is read (e.g. to check credentials).
    public mutating func post(
        _ pattern: String, admit: Admission? = nil, _ handler: @escaping @Sendable (Request) async throws -> Response
    ) {
        add(.post, pattern, .async(handler), admit: admit)
    }

    /// Finds the handler for a request. `HEAD` falls back to `GET` (libmicrohttpd drops the body).
    public func match(_ method: HTTPMethod, _ path: String) -> Match {
        switch resolve(method, path) {
        case .found(let route, let parameters): .found(route.handler, parameters: parameters)
        case .methodNotAllowed(let allow): .methodNotAllowed(allow: allow)
        case .notFound: .notFound
        }
    }

    /// Like ``match(_:_:)``, with the whole route: the path's segments walked down ``RouteTree``.
    func resolve(_ method: HTTPMethod, _ path: String) -> Resolution {
        let parts = Self.split(path)
        return choose(method, parts, among: tree.matches(parts))
    }

    /// ``resolve(_:_:)`` the plain way, trying every route of the path's length in registration
    /// order: the reference the tree is checked against.
    func resolveByScan(_ method: HTTPMethod, _ path: String) -> Resolution {
        let parts = Self.split(path)
        let bound = (routesBySegmentCount[parts.count] ?? []).filter { Self.binds(routes[$0].segments, parts) }
        return choose(method, parts, among: bound)
    }

    /// The answer among the routes (ascending) whose pattern binds `parts`: the first with the
    /// request's method; for `HEAD` without one, a `GET`; else which methods the path allows.
    private func choose(_ method: HTTPMethod, _ parts: [Substring], among bound: [Int]) -> Resolution {
        var allowed: [HTTPMethod] = []
        var getFallback: Int?
        for index in bound {
            let routeMethod = routes[index].method
            if routeMethod == method { return .found(routes[index], parameters: Self.parameters(routes[index].segments, parts)) }
            if method == .head && routeMethod == .get { getFallback = index }
            if !allowed.contains(routeMethod) { allowed.append(routeMethod) }
        }
        if let index = getFallback { return .found(routes[index], parameters: Self.parameters(routes[index].segments, parts)) }
        if allowed.isEmpty { return .notFound }
        if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
        return .methodNotAllowed(allow: allowed)
    }

    /// Byte-wise: `String.split` compares Characters, which showed on every request.
    private static func split(_ path: String) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map { Substring($0) }
    }

    /// Whether `parts` has `segments`' length and literals.
    private static func binds(_ segments: [Segment], _ parts: [Substring]) -> Bool {
        guard segments.count == parts.count else { return false }
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, !literal.utf8.elementsEqual(part.utf8) { return false }
        }
        return true
    }

    /// The `{name}` segments' values in a path that binds `segments`.
    private static func parameters(_ segments: [Segment], _ parts: [Substring]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            if case .parameter(let name) = segment { parameters[name] = String(part) }
        }
        return parameters
    }
}

/// Percent-decoding (RFC 3986 §2.1) of path segments and query values. libmicrohttpd is told to
/// leave URLs as sent, because its own decoding wrote `%00` as a terminating NUL (truncating the
/// value) and turned every invalid UTF-8 sequence into the same U+FFFD; here the failure shows.
public enum PercentDecoding {
    /// `text` with each `%XX` replaced by its byte, read as UTF-8; nil when `text` holds a byte that
    /// is not ASCII (a URL is ASCII; raw bytes were already replaced on their way in), a `%` not
    /// followed by two hex digits, or decodes to invalid UTF-8. `%00` decodes to U+0000: refusing
    /// control characters is the caller's rule.
    public static func decode(_ text: some StringProtocol) -> String? {
        guard let bytes = bytes(text, strict: true) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// As ``decode(_:)``, but malformed escapes stay as sent and invalid UTF-8 becomes U+FFFD: for
    /// query values, which every handler checks against what it accepts.
    public static func decodeLeniently(_ text: some StringProtocol) -> String {
        String(decoding: bytes(text, strict: false) ?? Array(text.utf8), as: UTF8.self)
    }

    private static func bytes(_ text: some StringProtocol, strict: Bool) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        if strict && utf8.contains(where: { $0 >= 0x80 }) { return nil }
        guard utf8.contains(UInt8(ascii: "%")) else { return utf8 }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%"), i + 2 < utf8.count, let high = hex(utf8[i + 1]), let low = hex(utf8[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else if utf8[i] == UInt8(ascii: "%") && strict {
                return nil
            } else {
                out.append(utf8[i])
                i += 1
            }
        }
        return out
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A request as it completed, for metrics: its route pattern (bounded, unlike the path), not its path.
public struct CompletedRequest: Sendable {
    public var method: HTTPMethod
    /// The matched route's pattern (`/v1/customers/{appUserId}`); nil when no route matched.
    public var route: String?
    /// The status answered (0 when the connection ended before an answer).
    public var status: Int
    public var seconds: Double

    public init(method: HTTPMethod, route: String?, status: Int, seconds: Double) {
        self.method = method
        self.route = route
        self.status = status
        self.seconds = seconds
    }
}
