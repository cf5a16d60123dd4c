/// What the server does with one request, call by call, without a socket: admit its head (the
/// size limits, the route, the route's admission), assemble its body within the limit or drain it
/// after a refusal, and pick the answer. libmicrohttpd's access handler (`HTTPServer.handle`)
/// feeds it what it read and does what each ``Step`` says; tests drive it the same way.
struct RequestExchange {
    /// The limits that decide a request before its handler runs.
    struct Limits {
        var maxURLBytes: Int
        var maxHeaderBytes: Int
        var maxBodyBytes: Int
        /// How much of an oversized body is read and dropped before the connection is cut instead.
        var discardBudget: Int
        /// How much of a body refused before reading (no body allowed, failed admission) is drained.
        var refusalDrainBytes: Int
    }

    /// The request line and headers, as read off the connection.
    struct Head {
        var method: HTTPMethod
        /// The path as sent (percent-encoded).
        var path: String
        var requestId: String
        var headers: HTTPHeaders
        /// The peer's address; the client's is derived from it and `X-Forwarded-For`.
        var peer: String
        /// Size of the request line and headers.
        var headerBytes: Int
        /// The query parameters and the names given more than once, read only for a request that
        /// has a route.
        var query: () -> (values: [String: String], repeated: Set<String>)
    }

    /// What the access handler does next.
    enum Step {
        /// Keep reading (the bytes given, if any, are consumed).
        case proceed
        /// Queue this answer now.
        case answer(Response)
        /// Run the route's handler on the whole request.
        case run(Handler, Request)
    }

    /// Length of the request target as sent (path and query, before decoding).
    let targetBytes: Int
    let limits: Limits
    private(set) var method = HTTPMethod.get
    private(set) var path = "/"
    private(set) var requestId = ""
    private(set) var remoteAddress = ""
    /// The matched route's pattern (nil when none matched), for metrics.
    private(set) var route: String?
    /// The answer decided before the body was read; the body is then discarded, not buffered.
    private(set) var refusal: Response?
    /// Whether the answer carries `Connection: close`.
    private(set) var closeAfter = false
    /// Whether the answer leaves body bytes unread, so the connection must be drained before it
    /// is closed (a lingering close; closing with unread input resets it under the answer).
    private(set) var lingers = false
    private var request: Request?
    private var handler: Handler?
    private var body: [UInt8] = []
    /// Body bytes discarded before answering `refusal` at once (libmicrohttpd then cuts the connection).
    private var discardLimit = 0
    private var discarded = 0

    init(targetBytes: Int, limits: Limits) {
        self.targetBytes = targetBytes
        self.limits = limits
    }

    /// The headers are in, no body byte has been read: checks the limits, matches the route and
    /// admits the request, or records why it is refused. The answer comes on a later call (queuing
    /// one on the first call closes keep-alive connections), except for a refused request that
    /// waits for `100 Continue`: its body will never be read, so it is answered at once.
    mutating func admit(
        _ head: Head, router: Router, trustedProxies: TrustedProxies, errorResponse: (any Error, Request) -> Response
    ) -> Step {
        method = head.method
        path = head.path
        requestId = head.requestId
        remoteAddress = trustedProxies.clientAddress(
            peer: head.peer,
            forwardedFor: head.headers.compactMap { $0.name.caseInsensitiveEquals("X-Forwarded-For") ? $0.value : nil })
        decide(head, router: router, errorResponse: errorResponse)
        guard let refusal else { return .proceed }
        if head.headers["Expect"]?.lowercased() == "100-continue" { return .answer(refusal) }
        // libmicrohttpd takes an answer only before the body or after all of it: a body longer
        // than the drain (or of unknown length) is answered now, and drained at the close.
        let declared = head.headers["Content-Length"].flatMap { Int($0) }
        if head.headers["Transfer-Encoding"] != nil || (declared ?? 0) > discardLimit {
            lingers = true
            return .answer(refusal)
        }
        return .proceed
    }

    private mutating func decide(_ head: Head, router: Router, errorResponse: (any Error, Request) -> Response) {
        let headers = head.headers
        let hasBody = headers["Transfer-Encoding"] != nil || headers["Content-Length"].map { Int($0) != 0 } ?? false
        if max(targetBytes, path.utf8.count) > limits.maxURLBytes {
            return refuse(HTTPError.uriTooLong(limit: limits.maxURLBytes), drain: limits.refusalDrainBytes)
        }
        if head.headerBytes > limits.maxHeaderBytes {
            return refuse(HTTPError.headerFieldsTooLarge(limit: limits.maxHeaderBytes), drain: limits.refusalDrainBytes)
        }
        switch router.resolve(method, path) {
        case .notFound:
            refuse(HTTPError.notFound("no route for \(path)"), drain: limits.discardBudget)
        case .methodNotAllowed(let allow):
            refuse(HTTPError.methodNotAllowed(allow: allow), drain: limits.discardBudget)
        case .found(let route, let parameters):
            self.route = route.pattern
            if hasBody && !route.takesBody {
                return refuse(HTTPError.bodyNotAllowed, drain: limits.refusalDrainBytes, close: true)
            }
            if let length = headers["Content-Length"], let declared = Int(length), declared > limits.maxBodyBytes {
                return refuse(HTTPError.payloadTooLarge(limit: limits.maxBodyBytes), drain: limits.discardBudget)
            }
            let query = head.query()
            var request = Request(
                method: method, path: path, query: query.values, headers: headers, pathParameters: parameters,
                remoteAddress: remoteAddress, requestId: requestId)
            request.repeatedQueryNames = query.repeated
            if let check = route.admit {
                do {
                    try check(request)
                } catch {
                    return refuse(errorResponse(error, request), drain: limits.refusalDrainBytes, close: hasBody)
                }
            }
            self.request = request
            handler = route.handler
        }
    }

    /// Body bytes arrived. A refused request's body is drained, and answered at once past its
    /// drain limit (libmicrohttpd then cuts the connection, after a lingering close). A body past
    /// `maxBodyBytes` turns into a 413 refusal and is drained from then on.
    mutating func receive(_ bytes: UnsafeBufferPointer<UInt8>) -> Step {
        if let refusal {
            discarded += bytes.count
            guard discarded > discardLimit else { return .proceed }
            lingers = true
            return .answer(refusal)
        }
        if body.count + bytes.count > limits.maxBodyBytes {
            refuse(HTTPError.payloadTooLarge(limit: limits.maxBodyBytes), drain: limits.discardBudget)
            discarded = body.count + bytes.count
            body = []
            return .proceed
        }
        body.append(contentsOf: bytes)
        return .proceed
    }

    /// The whole request is in: its refusal, or its handler with the request and body.
    mutating func complete() -> Step {
        if let refusal { return .answer(refusal) }
        guard var request, let handler else { return .answer(HTTPError.internalError.response(requestId: requestId)) }
        request.body = body
        body = []
        return .run(handler, request)
    }

    private mutating func refuse(_ error: some HTTPResponseError, drain: Int, close: Bool = false) {
        refuse(error.response(requestId: requestId), drain: drain, close: close)
    }

    private mutating func refuse(_ response: Response, drain: Int, close: Bool = false) {
        refusal = response
        discardLimit = drain
        closeAfter = close
    }
}
