import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client of an Entitled server, for apps (a customer token) and backends (an API key).
///
/// Answers are cached in memory and, with ``Configuration/cacheDirectory``, on disk. A fresh answer
/// (within the server's `Cache-Control: max-age`) is served as is; a stale one is served while a
/// background refresh runs; when the server cannot be reached, a stale answer is still used until
/// its own ``CustomerAnswer/validUntil`` and never beyond. "Now" is the server's time carried
/// forward on a monotonic clock (``MonotonicClock``), so the device's wall clock neither extends
/// nor cuts access.
public actor EntitledClient {
    /// Who the client calls as.
    public enum Credentials: Sendable {
        /// An app: its customer's id and a provider of short-lived customer tokens (JWTs its own
        /// backend mints; `sub` = `appUserId`). Called before each request: cache inside it.
        case customer(appUserId: String, token: @Sendable () async throws -> String)
        /// A backend: an API key with the `read` (and, to post transactions, `write`) scope.
        case apiKey(String)
    }

    /// Everything injectable; the defaults are what an app wants.
    public struct Configuration: Sendable {
        /// Where answers are kept across launches (e.g. an app group container); nil: memory only.
        public var cacheDirectory: URL?
        /// Asks the server for this environment (`Sandbox`, …); nil: the server's default.
        public var environment: String?
        public var retry: RetryPolicy
        public var transport: any HTTPTransport
        public var sleeper: any Sleeper
        public var monotonicClock: any MonotonicClock
        public var wallClock: any WallClock
        /// Seconds one attempt may take before it counts as unreachable (and is retried).
        public var requestTimeout: TimeInterval = 20
        /// Called with every answer the client receives (fetched, or after a posted transaction).
        public var onAnswer: (@Sendable (CustomerAnswer) -> Void)?

        public init(
            cacheDirectory: URL? = nil, environment: String? = nil, retry: RetryPolicy = RetryPolicy(),
            transport: any HTTPTransport = URLSessionTransport(), sleeper: any Sleeper = TaskSleeper(),
            monotonicClock: any MonotonicClock = SystemMonotonicClock(), wallClock: any WallClock = SystemWallClock()
        ) {
            self.cacheDirectory = cacheDirectory
            self.environment = environment
            self.retry = retry
            self.transport = transport
            self.sleeper = sleeper
            self.monotonicClock = monotonicClock
            self.wallClock = wallClock
        }
    }

    public nonisolated let baseURL: URL
    public nonisolated let credentials: Credentials
    public nonisolated let configuration: Configuration
    private var cache: AnswerCache
    /// The request in flight per customer, and its number (so that only it unregisters itself).
    private var refreshes: [String: (number: Int, task: Task<CustomerAnswer, any Error>)] = [:]
    private var refreshNumber = 0

    public init(baseURL: URL, credentials: Credentials, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.credentials = credentials
        self.configuration = configuration
        cache = AnswerCache(directory: configuration.cacheDirectory)
    }

    // MARK: - Reading

    /// The customer's answer: cached while fresh, else stale while a refresh runs in the
    /// background, else fetched. Throws only when no usable answer is at hand.
    /// - Parameter appUserId: required with an API key; a customer token's own id otherwise.
    public func customer(_ appUserId: String? = nil) async throws -> CustomerAnswer {
        let id = try resolve(appUserId)
        if let (entry, answer) = cache.entry(for: key(id)) {
            let now = trustedNow(entry)
            if now < answer.serverTime.addingTimeInterval(Double(entry.maxAgeSeconds)) { return answer }
            if answer.validUntil.map({ now < $0 }) ?? true {
                startRefresh(id)
                return answer
            }
        }
        return try await refresh(id)
    }

    /// Whether the customer has `entitlement` now. False when no usable answer is at hand
    /// (fail closed): offline beyond the cached answer's validity, or never fetched.
    public func isEntitled(_ entitlement: String, appUserId: String? = nil) async -> Bool {
        (try? await customer(appUserId))?.grants(entitlement) ?? false
    }

    /// Asks the server now (with retries), whatever the cache holds; one request per customer at a time.
    public func refresh(_ appUserId: String? = nil) async throws -> CustomerAnswer {
        try await refreshTask(try resolve(appUserId)).value
    }

    /// Waits until every background refresh started so far has ended (tests; an app's
    /// background task may await it before it suspends).
    public func backgroundRefreshesFinished() async {
        for (_, task) in refreshes.values { _ = try? await task.value }
    }

    /// The server's time now as this client reckons it for `appUserId`'s cached answer (nil: none cached).
    public func trustedNow(_ appUserId: String? = nil) throws -> Date? {
        let id = try resolve(appUserId)
        return cache.entry(for: key(id)).map { trustedNow($0.entry) }
    }

    // MARK: - Posting

    /// Posts a StoreKit 2 transaction (`jwsRepresentation`) and returns the updated answer. The
    /// app may finish the transaction once this returns, and only then.
    public func post(signedTransaction: String, appUserId: String? = nil) async throws -> CustomerAnswer {
        try await post(["signedTransaction": signedTransaction], appUserId: appUserId)
    }

    /// Posts a StoreKit 2 `AppTransaction` (`jwsRepresentation`) and returns the updated answer.
    public func post(appTransaction: String, appUserId: String? = nil) async throws -> CustomerAnswer {
        try await post(["signedAppTransaction": appTransaction], appUserId: appUserId)
    }

    private func post(_ body: [String: String], appUserId: String?) async throws -> CustomerAnswer {
        let id = try resolve(appUserId)
        var request = URLRequest(url: customerURL(id, "/transactions", query: false))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        let (data, response) = try await send(request)
        return try remember(id, data: data, response: response)
    }

    // MARK: - Catalog

    /// The products the app sells in `storefront` (ISO 3166-1 alpha-3, as StoreKit's
    /// `Storefront.countryCode`), from `GET /v1/apps/{bundleId}/products`.
    public func catalog(bundleId: String, storefront: String) async throws -> Catalog {
        var components = URLComponents(url: path("/v1/apps/\(Self.escape(bundleId))/products"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "storefront", value: storefront)]
        let (data, _) = try await send(URLRequest(url: components.url!))
        do { return try JSONDecoder().decode(Catalog.self, from: data) } catch {
            throw EntitledError.invalidResponse("catalog: \(error)")
        }
    }

    // MARK: - Internals

    private func key(_ appUserId: String) -> String {
        AnswerCache.key(appUserId: appUserId, environment: configuration.environment)
    }

    func resolve(_ appUserId: String?) throws -> String {
        if let appUserId { return appUserId }
        if case .customer(let id, _) = credentials { return id }
        throw EntitledError.missingAppUserId
    }

    private func trustedNow(_ entry: CachedAnswer) -> Date {
        let now = entry.anchor.now(
            monotonic: configuration.monotonicClock, wall: configuration.wallClock, floor: cache.latestTrustedTime)
        cache.observe(trustedTime: now)
        return now
    }

    private func startRefresh(_ id: String) { _ = refreshTask(id) }

    /// The request in flight for `id`, or a new one. It unregisters itself on the actor before
    /// its result is seen, so a failed request (offline) is never handed to a later caller.
    private func refreshTask(_ id: String) -> Task<CustomerAnswer, any Error> {
        if let running = refreshes[id] { return running.task }
        refreshNumber += 1
        let number = refreshNumber
        let task = Task {
            defer { self.refreshEnded(id, number) }
            return try await self.fetch(id)
        }
        refreshes[id] = (number, task)
        return task
    }

    private func refreshEnded(_ id: String, _ number: Int) {
        if refreshes[id]?.number == number { refreshes[id] = nil }
    }

    private func fetch(_ id: String) async throws -> CustomerAnswer {
        // The client keeps its own cache: a refresh must reach the server, never URLSession's cache.
        let request = URLRequest(url: customerURL(id, "", query: true), cachePolicy: .reloadIgnoringLocalCacheData)
        let (data, response) = try await send(request)
        return try remember(id, data: data, response: response)
    }

    /// Decodes an answer, anchors it on the local clocks and caches it.
    private func remember(_ id: String, data: Data, response: HTTPURLResponse) throws -> CustomerAnswer {
        guard data.count <= Self.maxAnswerBytes else {
            throw EntitledError.invalidResponse("customer answer of \(data.count) bytes (at most \(Self.maxAnswerBytes))")
        }
        let answer: CustomerAnswer
        do { answer = try CustomerAnswer.decode(data) } catch {
            throw EntitledError.invalidResponse("customer answer: \(error)")
        }
        let entry = CachedAnswer(
            key: key(id), body: data, maxAgeSeconds: Self.maxAge(response.value(forHTTPHeaderField: "Cache-Control")),
            anchor: TimeAnchor(serverTime: answer.serverTime, monotonic: configuration.monotonicClock, wall: configuration.wallClock))
        cache.store(entry, answer: answer)
        configuration.onAnswer?(answer)
        return answer
    }

    /// No answer larger than this is decoded or stored (the server's are a few kilobytes).
    static let maxAnswerBytes = 4 << 20

    /// `max-age=N` of a `Cache-Control` value; 0 when absent or `no-store`/`no-cache`.
    static func maxAge(_ header: String?) -> Int {
        guard let header else { return 0 }
        for directive in header.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]) { return max(0, seconds) }
        }
        return 0
    }

    /// One request with authorization, retried on a 5xx or an unreachable server (never on a 4xx).
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await Self.send(request, bearer: try await bearer(), configuration: configuration)
    }

    /// One request with `bearer`, retried on a 5xx or an unreachable server (never on a 4xx).
    static func send(_ request: URLRequest, bearer: String, configuration: Configuration) async throws -> (Data, HTTPURLResponse) {
        var request = request
        request.timeoutInterval = configuration.requestTimeout
        request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let policy = configuration.retry
        var attempt = 1
        while true {
            let failure: EntitledError
            var retryAfter: Int?
            let reply: (Data, HTTPURLResponse)?
            var unreachable = ""
            do { reply = try await configuration.transport.send(request) } catch {
                reply = nil
                unreachable = String(describing: error)
            }
            if let (data, response) = reply {
                if (200..<300).contains(response.statusCode) { return (data, response) }
                let problem = try? JSONDecoder().decode(Problem.self, from: data)
                failure = .server(
                    status: response.statusCode, code: problem?.code ?? "HTTP_\(response.statusCode)",
                    detail: problem?.detail ?? problem?.title)
                guard response.statusCode >= 500 else { throw failure }
                retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) }
            } else {
                failure = .offline(unreachable)
            }
            guard attempt < policy.maxAttempts else { throw failure }
            try await configuration.sleeper.sleep(seconds: policy.delay(after: attempt, retryAfter: retryAfter))
            attempt += 1
        }
    }

    private func bearer() async throws -> String {
        switch credentials {
        case .apiKey(let key): return key
        case .customer(_, let provider):
            do { return try await provider() } catch { throw EntitledError.credentials(String(describing: error)) }
        }
    }

    func customerURL(_ id: String, _ suffix: String, query: Bool) -> URL {
        let url = path("/v1/customers/\(Self.escape(id))\(suffix)")
        guard query, let environment = configuration.environment else { return url }
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "environment", value: environment)]
        return components.url!
    }

    /// `baseURL` + an already-escaped path (kept escaped: `appendingPathComponent` would re-escape `%`).
    func path(_ escaped: String) -> URL { Self.url(baseURL, escaped) }

    static func url(_ baseURL: URL, _ escaped: String) -> URL {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + escaped)!
    }

    /// Percent-encodes a path segment: everything but RFC 3986's unreserved characters, so `/` is `%2F`.
    static func escape(_ segment: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return segment.precomposedStringWithCanonicalMapping.addingPercentEncoding(withAllowedCharacters: unreserved) ?? segment
    }
}

/// The products an app sells in one storefront (`GET /v1/apps/{bundleId}/products`).
public struct Catalog: Sendable, Codable, Hashable {
    public struct Product: Sendable, Codable, Hashable {
        public var productId: String
        public var type: String
        public var subscriptionGroup: String?
        public var level: Int?
        public var entitlements: [String]
    }

    public var bundleId: String
    public var storefront: String?
    public var products: [Product]

    /// Whether `productId` is sold here.
    public func sells(_ productId: String) -> Bool { products.contains { $0.productId == productId } }
}
