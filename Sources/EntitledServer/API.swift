import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import HTTPServer
import Storage

/// The HTTP API (docs/openapi.yaml): handlers that parse, verify, store and answer — nothing more.
///
/// Every decision about entitlements is the engine's; every durable effect is the ledger's; every
/// signature check is the verifier's. Apple's endpoints need no key (the signature or shared secret
/// is the proof); customer endpoints need `read` (GET) or `write` (POST), admin ones `admin`.
public struct API: Sendable {
    /// Apple's notification bodies are at most this large (413 beyond).
    public static let maxNotificationBytes = 256 * 1024
    /// Deepest JSON nesting accepted in request bodies (400 `JSON_TOO_DEEP` beyond).
    public static let maxJSONDepth = 32
    /// History page size when `limit` is absent, and its maximum.
    public static let defaultHistoryLimit = 50
    public static let maxHistoryLimit = 200

    let configuration: Configuration
    let verifier: any NotificationVerifying
    let ledger: FactLedger
    let clock: any EpochClock
    let authenticator: Authenticator
    let budget: RejectionBudget
    /// The one policy every answer is evaluated with: merged from every configured app (customers
    /// are not per app), the policy the ledger's projections use too.
    let customerPolicy: Policy
    /// The environments a customer answer merges unless `?environment=` names one
    /// (``EntitledConfig/Configuration/grantEnvironments``), the ones the ledger's stored answers merge too.
    let grantEnvironments: [Environment]
    /// Encoded customer answers, reused while unchanged; its codec reads the request bodies.
    let cache: ProjectionCache
    var codec: JSONCodec { cache.codec }
    let metrics: ServerMetrics
    /// Per bundleId, for apps with `signingKey`: their offer signer.
    let signers: [String: OfferSigner]
    /// Bounds how fast signatures are handed out, per customer and per signing key.
    let offerLimiter: OfferSigningLimiter
    /// The App Store Server API client of each app with `serverAPI`, by bundleId.
    let serverAPI: [String: AppStoreServerAPIClient]
    /// Durable jobs (backfills).
    var jobs: any DurableJobStore { ledger.store }
    /// App keys, the token minter and their rate limits (``AppKeyGate``).
    let appKeys: AppKeyGate

    public init(
        configuration: Configuration, verifier: any NotificationVerifying, ledger: FactLedger,
        clock: any EpochClock, budget: RejectionBudget? = nil, hmac: any HMACSHA256Computing = Digests(),
        cache: ProjectionCache = ProjectionCache(), metrics: ServerMetrics = ServerMetrics(),
        serverAPI: [String: AppStoreServerAPIClient] = [:]
    ) {
        self.configuration = configuration
        self.serverAPI = serverAPI
        self.cache = cache
        self.metrics = metrics
        self.verifier = verifier
        self.ledger = ledger
        self.clock = clock
        self.authenticator = Authenticator(
            apiKeys: configuration.apiKeys, customerTokens: configuration.customerTokens, hmac: hmac, clock: clock)
        self.budget = budget ?? RejectionBudget(clock: clock)
        self.customerPolicy = configuration.policy
        self.grantEnvironments = configuration.grantEnvironments
        self.signers = Self.offerSigners(configuration)
        self.appKeys = AppKeyGate(configuration: configuration, hmac: hmac, clock: clock)
        self.offerLimiter = OfferSigningLimiter(configuration.offerSigning, clock: clock)
    }

    /// Registers every endpoint of the API (health and readiness are registered by ``Application``).
    public func register(on router: inout Router) {
        let api = self
        router.post("/v1/apple/notifications") { try await api.notificationV2($0) }
        router.post("/v1/apple/notifications/v1") { try await api.notificationV1($0) }
        router.get("/v1/customers/{appUserId}", fast: { try api.getCustomerNow($0) }) { try await api.getCustomer($0) }
        // Credentials are checked when the headers are in, so a bad key never gets its body read.
        router.post("/v1/customers/{appUserId}/transactions", admit: { _ = try api.authenticate($0) }) {
            try await api.postTransaction($0)
        }
        router.post("/v1/customers/{appUserId}/receipts", admit: { _ = try api.authenticate($0) }) {
            try await api.postReceipt($0)
        }
        router.get("/v1/customers/{appUserId}/history") { try await api.history($0) }
        router.post("/v1/customers/{appUserId}/offers/sign") { try await api.signOffer($0) }
        router.post("/v1/customers/{appUserId}/consumables/{productId}/spend", admit: { _ = try api.authenticate($0) }) {
            try await api.spendConsumable($0)
        }
        router.get("/v1/customers/{appUserId}/products") { try await api.customerProducts($0) }
        router.get("/v1/apps/{bundleId}/products") { try await api.products($0) }
        router.get("/v1/subscriptions/{originalTransactionId}") { try await api.subscription($0) }
        router.get("/v1/events") { try await api.events($0) }
        registerSupport(on: &router)
        registerWebhooks(on: &router)
        registerCustomers(on: &router)
        registerAnonymousCustomers(on: &router)
        registerConsole(on: &router)
        router.add(.get, "/metrics", .inline { try api.metricsPage($0) })  // quick, no storage
    }

    // MARK: - Apple

    /// `POST /v1/apple/notifications`: V2 `{"signedPayload": "…"}`.
    func notificationV2(_ request: Request) async throws -> Response {
        let now = clock.nowMilliseconds()
        try checkAppleBody(request)
        // Verification is the expensive part: refused at once only after this address's own
        // notification failures, never for its bad keys or anyone's V1 failures.
        guard budget.allows(request.remoteAddress, .appleSignature) else { throw RejectionBudget.exhausted }
        do {
            guard let envelope = try? codec.decode(ResponseBodyV2.self, from: request.body) else {
                throw Rejection(.invalidJSON, "the body is not {\"signedPayload\": \"…\"}")
            }
            let status = try await ingestNotification(
                signedPayload: envelope.signedPayload, source: .appleV2, now: now, request: request)
            return .acknowledgment(status)
        } catch let error as VerificationError {
            throw await reject(Rejection(error), .appleSignature, request: request, now: now)
        } catch let rejection as Rejection {
            throw await reject(rejection, .appleSignature, request: request, now: now)
        }
    }

    /// `POST /v1/apple/notifications/v1`: the legacy JSON body; `password` must equal the app's shared secret.
    func notificationV1(_ request: Request) async throws -> Response {
        let now = clock.nowMilliseconds()
        try checkAppleBody(request)
        let body: ResponseBodyV1
        do {
            body = try AppStoreJSON.decode(ResponseBodyV1.self, from: Data(request.body), codec: codec)
        } catch {
            throw HTTPError(.invalidJSON, "the body is not a V1 notification: \(error.description)")
        }
        let app = body.bid.flatMap { configuration.app(bundleId: $0) }
        // Compare even when the app or its secret is unknown, so timing does not tell which it was.
        let expected = app?.sharedSecret ?? "\u{0}no shared secret configured"
        let matches = constantTimeSecretEquals(body.password ?? "", expected)
        guard let app, app.sharedSecret != nil, matches else {
            let error = Rejection(.invalidSharedSecret, "password does not match the app's shared secret")
            throw await reject(
                error, .sharedSecret, request: request, now: now, redactedBody: redacted(body))
        }
        let raw = redacted(body)
        let facts: [Fact]
        do {
            facts = try app.facts(fromV1: body)
        } catch {
            throw await reject(
                Self.rejection(error), .sharedSecret, request: request, now: now, redactedBody: raw)
        }
        let environment = Environment(
            body.environment?.appStoreEnvironment ?? body.unifiedReceipt?.environment?.appStoreEnvironment)
        do {
            try checkEnvironment(AppStoreEnvironment(rawValue: environment.rawValue), app: app)
        } catch {
            throw await reject(Rejection(error), .sharedSecret, request: request, now: now, redactedBody: raw)
        }
        // V1 has no id: the body's digest (without the password) stands in for one.
        let message = ReceivedMessage(
            notificationUUID: "v1:" + Hex.encode(Digests.hash(raw)), source: .appleV1, body: raw, receivedAt: now,
            notificationType: body.notificationType?.rawValue ?? "", bundleId: app.bundleId)
        // V1 facts have no signed form: their identity keys them.
        let status = try await store { () async throws(StorageError) in
            try await ledger.ingest(message, facts: facts.map { ($0, nil) })
        }
        noteIngested(request, message, signedDate: nil, bundleId: app.bundleId, status: status)
        return .acknowledgment(status)
    }

    /// An accepted signed message's body as the ledger keeps it: only the member that was
    /// verified, so that unknown keys posted beside it (padding) are not stored. Written by the
    /// codec's writer (`JSONEncoder`'s bytes; with the fast paths without its string detour, and
    /// around a JWS its verification found `bare` as it is: ``JSONCodec/encodeMember(_:_:plain:)``).
    static func storedBody(_ key: String, _ jws: String, codec: JSONCodec, bare: Bool = false) -> [UInt8] {
        (try? codec.encodeMember(key, jws, plain: bare)) ?? []
    }

    /// The V1 body without its password, for the ledger (secrets are never stored or logged).
    func redacted(_ body: ResponseBodyV1) -> [UInt8] {
        var copy = body
        copy.password = nil
        return (try? AppStoreJSON.encode(copy)).map(Array.init) ?? []
    }

    // MARK: - Customers

    /// `GET /v1/customers/{appUserId}[?environment=Sandbox]`: the grant environments merged, or
    /// the one the query names.
    func getCustomer(_ request: Request) async throws -> Response {
        let appUserId = try Self.appUserId(request)
        try authorize(request, scope: .read, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        let context = try answerContext(request, now: now)
        let (bytes, nextChangeAt) = try await customerAnswer(appUserId: appUserId, context: context)
        return customerResponse(bytes, nextChangeAt: nextChangeAt, now: now)
    }

    /// A customer answer, cacheable by the client until the TTL or the answer's next change.
    func customerResponse(_ bytes: [UInt8], nextChangeAt: Int64?, now: Int64) -> Response {
        var response = Response.json(bytes: bytes)
        let maxAge = CustomerBody.maxAge(nextChangeAt: nextChangeAt, now: now, ttl: configuration.cacheTTLSeconds)
        response.headers.set("Cache-Control", "private, max-age=\(maxAge)")
        return response
    }

    /// `GET /v1/customers/{appUserId}` on the poll thread, when the ledger holds a rendered answer
    /// that still holds and can read it at once; nil sends the request to ``getCustomer(_:)``.
    func getCustomerNow(_ request: Request) throws -> Response? {
        let appUserId = try Self.appUserId(request)
        try authorize(request, scope: .read, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        let context = try answerContext(request, now: now)
        // A storage error here is left to the slow path, which answers it properly.
        guard let rendered = try? ledger.renderedCustomerNow(appUserId: appUserId, context: context) else { return nil }
        return customerResponse(rendered.body(serverTime: now), nextChangeAt: rendered.nextChangeAt, now: now)
    }

    /// The customer's answer at `context.now`: the projection's rendered answer when it still holds
    /// (the hot read: no decoding, no encoding), else evaluated from the facts.
    func customerAnswer(appUserId: String, context: EvaluationContext) async throws -> (body: [UInt8], nextChangeAt: Int64?) {
        if let rendered = try await store({ () async throws(StorageError) in
            try await ledger.renderedCustomer(appUserId: appUserId, context: context)
        }) {
            return (rendered.body(serverTime: context.now), rendered.nextChangeAt)
        }
        let snapshot = try await store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: context)
        }
        let body = CustomerBody(customer: snapshot.customer, state: snapshot.state, now: context.now)
        return (try cache.bytes(for: body), snapshot.state.nextStatusChangeAt)
    }

    /// The body of `POST /v1/customers/{appUserId}/transactions`: exactly one of the two.
    struct PostedTransaction: Decodable {
        var signedTransaction: String?
        var signedAppTransaction: String?
    }

    /// `POST /v1/customers/{appUserId}/transactions`: verify, link, apply, answer the new state.
    func postTransaction(_ request: Request) async throws -> Response {
        let appUserId = try Self.appUserId(request)
        try authorize(request, scope: .write, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        guard request.body.count <= Self.maxNotificationBytes else { throw HTTPError.payloadTooLarge(limit: Self.maxNotificationBytes) }
        let posted = try decodeBody(PostedTransaction.self, request)
        guard budget.allows(request.remoteAddress, .clientSignature) else { throw RejectionBudget.exhausted }
        do {
            let verified: Fact
            let app: App
            let claim: Claim
            let signed: String
            let member: String
            var unknown: [UnknownMember] = []
            switch (posted.signedTransaction, posted.signedAppTransaction) {
            case (let jws?, nil):
                let checked = try await verifiedTransaction(jws)
                app = checked.app
                try await enqueueBackfillIfUnseen(
                    app: app, checked.fact.originalTransactionId, environment: checked.fact.environment, source: .client, now: now)
                verified = .transaction(checked.fact)
                unknown = checked.unknown
                signed = jws
                member = "signedTransaction"
                claim = Claim(appUserId: appUserId, behaviour: app.restoreBehavior)
            case (nil, let jws?):
                guard let peeked = JWSPeek.payload(AppTransaction.self, jws, codec: codec) else {
                    throw VerificationError.malformed("signedAppTransaction is not a JWS")
                }
                app = try self.app(peeked.bundleId)
                let appTransaction = try await verifier.verifyAppTransaction(signedAppTransaction: jws, app: app)
                try checkEnvironment(appTransaction.receiptType, app: app)
                let fact: AppTransactionFact
                do { fact = try app.appTransaction(appTransaction) } catch {
                    throw Self.rejection(error)
                }
                verified = .appTransaction(fact)
                signed = jws
                member = "signedAppTransaction"
                // No subscription to link: the app transaction is the customer's through their token.
                claim = Claim(appUserId: appUserId, behaviour: .keep)
            default:
                throw HTTPError(.invalidRequest, "send exactly one of signedTransaction and signedAppTransaction")
            }
            let message = ReceivedMessage(
                notificationUUID: nil, source: .client, body: Self.storedBody(member, signed, codec: codec), receivedAt: now,
                bundleId: app.bundleId)
            _ = try await ingestRecordingUnknown(message, facts: [(verified, signed, unknown)], claim: claim)
            if case .transaction(let fact) = verified {
                try await enqueueFinish(app: app, transactionId: fact.transactionId, environment: fact.environment, source: .client, now: now)
            }
            // The answer a plain GET gives next: the grant environments merged.
            let context = EvaluationContext(policy: customerPolicy, environments: grantEnvironments, now: now)
            var response = Response.json(bytes: try await customerAnswer(appUserId: appUserId, context: context).body)
            response.headers.set("Cache-Control", "no-store")
            return response
        } catch let error as VerificationError {
            throw await reject(Rejection(error), .clientSignature, request: request, now: now)
        } catch let rejection as Rejection {
            throw await reject(rejection, .clientSignature, request: request, now: now)
        }
    }

    /// A history request's `limit` (default ``defaultHistoryLimit``, at most ``maxHistoryLimit``) and
    /// its `cursor` unwrapped for the ledger (nil for the first page).
    public static func historyPaging(_ request: Request) throws(HTTPError) -> (cursor: String?, limit: Int) {
        var limit = defaultHistoryLimit
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...maxHistoryLimit).contains(value) else {
                throw HTTPError(.invalidLimit, "limit must be 1…\(maxHistoryLimit)")
            }
            limit = value
        }
        guard let cursor = request.query["cursor"], !cursor.isEmpty else { return (nil, limit) }
        guard let unwrapped = HistoryCursor.unwrap(cursor) else { throw invalidCursor }
        return (unwrapped, limit)
    }

    /// A history cursor this server did not give out (or that no longer fits the ledger).
    public static let invalidCursor = HTTPError(.invalidCursor, "the cursor is not one this server gave out")

    /// `GET /v1/customers/{appUserId}/history?cursor=…&limit=…`.
    func history(_ request: Request) async throws -> Response {
        let appUserId = try Self.appUserId(request)
        try authorize(request, scope: .read, appUserId: appUserId)
        let (storageCursor, limit) = try Self.historyPaging(request)
        let page = try await store(invalidRequest: Self.invalidCursor) { () async throws(StorageError) in
            try await ledger.history(appUserId: appUserId, cursor: storageCursor, limit: limit)
        }
        guard let page else { throw HTTPError(.customerNotFound, "no such customer") }
        return try .json(
            HistoryPageBody(
                appUserId: appUserId, items: page.entries.map(HistoryItemBody.init),
                nextCursor: page.nextCursor.map(HistoryCursor.wrap)))
    }

    // MARK: - Catalog and admin

    /// `GET /v1/apps/{bundleId}/products[?storefront=USA]`.
    func products(_ request: Request) async throws -> Response {
        let principal = try authenticate(request)
        if case .apiKey = principal { try authenticator.authorize(principal, scope: .read, appUserId: nil) }
        let bundleId = try request.parameter("bundleId")
        guard let app = configuration.app(bundleId: bundleId) else {
            throw HTTPError(.appNotFound, "no app with this bundleId")
        }
        return try .json(CatalogBody(app: app, storefront: try Self.storefrontQuery(request)))
    }

    /// `GET /v1/subscriptions/{originalTransactionId}[?environment=…]` (admin).
    func subscription(_ request: Request) async throws -> Response {
        let principal = try authenticate(request)
        try authenticator.authorize(principal, scope: .admin, appUserId: nil)
        let originalTransactionId = try request.parameter("originalTransactionId")
        let now = clock.nowMilliseconds()
        let record = try await store { () async throws(StorageError) in
            try await ledger.subscription(originalTransactionId: originalTransactionId)
        }
        guard let record else {
            throw HTTPError(.subscriptionNotFound, "nothing is known about this subscription")
        }
        let environment =
            request.query["environment"] != nil ? try Self.environment(request) : (record.facts.first?.environment ?? .production)
        let state = evaluate(facts: record.facts, policy: customerPolicy, now: now, environment: environment)
        let grant =
            state.subscriptionGroups.compactMap(\.current).first { $0.originalTransactionId == originalTransactionId }
            ?? state.nonConsumables.map(\.grant).first { $0.originalTransactionId == originalTransactionId }
            ?? state.nonRenewingSubscriptions.map(\.grant).first { $0.originalTransactionId == originalTransactionId }
        return try .json(
            SubscriptionAdminBody(
                originalTransactionId: originalTransactionId, bundleId: record.bundleId, environment: environment.rawValue,
                customer: record.customer, grant: grant, notifications: record.notifications.map(HistoryItemBody.init),
                serverTime: now))
    }

    // MARK: - Helpers

    static let unavailable = HTTPError(
        .storageUnavailable, "storage is unavailable; retry later", headers: ["Retry-After": "10"])

    /// This customer's answer cannot be computed (its projection failed); others are unaffected.
    static let projectionFailed = HTTPError(.projectionFailed, "this customer's entitlements cannot be computed now")

    /// Runs a ledger call: the one place a storage failure becomes an HTTP answer. 503
    /// `STORAGE_UNAVAILABLE`, or the request's own error: `invalidRequest` (400 `INVALID_REQUEST`
    /// unless the route names a more precise one, e.g. history's `INVALID_CURSOR`), 500 `PROJECTION_FAILED`.
    func store<T>(
        invalidRequest: HTTPError = HTTPError(.invalidRequest, "invalid request"), _ body: () async throws(StorageError) -> T
    ) async throws(HTTPError) -> T {
        do {
            return try await body()
        } catch {
            switch error.code {
            case .invalidArgument: throw invalidRequest
            case .projectionFailed: throw Self.projectionFailed
            default: throw Self.unavailable
            }
        }
    }

    /// Size and nesting checks shared by Apple's endpoints.
    func checkAppleBody(_ request: Request) throws {
        guard request.body.count <= Self.maxNotificationBytes else {
            throw HTTPError.payloadTooLarge(limit: Self.maxNotificationBytes)
        }
        try Self.checkDepth(request.body)
    }

    func decodeBody<T: Decodable>(_ type: T.Type, _ request: Request) throws -> T {
        try Self.checkDepth(request.body)
        return try request.decodeJSON(type)
    }

    func app(_ bundleId: String?) throws(VerificationError) -> App {
        guard let bundleId, let app = configuration.app(bundleId: bundleId) else {
            throw VerificationError(.invalidAppIdentifier, "the payload's bundleId is not a configured app")
        }
        return app
    }

    /// A payload that verified but does not map to facts: `INVALID_DATE` for a date outside
    /// ``Fact/acceptedDates``, else `MALFORMED_PAYLOAD`. Either is recorded as rejected.
    static func rejection(_ error: MappingError) -> Rejection {
        switch error.reason {
        case .missing: Rejection(.malformedPayload, error.description)
        case .dateOutOfRange: Rejection(.invalidDate, error.description)
        }
    }

    func checkEnvironment(_ environment: AppStoreEnvironment?, app: App) throws(VerificationError) {
        let name = environment?.rawValue ?? "Production"
        guard app.environments.contains(name) else {
            throw VerificationError(.invalidEnvironment, "environment \(name) is not accepted for this app")
        }
    }

    /// Records the rejection (best effort), charges the sender's `credential` budget, and returns
    /// the answer: 503 for retryable failures (nothing recorded, nothing charged), 429 when that
    /// budget was already spent (nothing recorded), else 4xx with the code.
    func reject(
        _ error: Rejection, _ credential: RejectionBudget.Credential, request: Request,
        now: Int64, redactedBody: [UInt8]? = nil
    ) async -> HTTPError {
        if error.code == .retryableVerificationFailure {
            return HTTPError(
                .retryableVerificationFailure, "verification could not complete; retry later", headers: ["Retry-After": "30"])
        }
        let source: IngestSource =
            switch request.path {
            case "/v1/apple/notifications": .appleV2
            case "/v1/apple/notifications/v1": .appleV1
            default: .client
            }
        noteRejected(request, source: source, code: error.code.rawValue)
        guard budget.charge(request.remoteAddress, credential) else { return RejectionBudget.exhausted }
        try? await ledger.recordRejected(
            ReceivedMessage(notificationUUID: nil, source: source, body: redactedBody ?? request.body, receivedAt: now),
            code: error.code.rawValue)
        return HTTPError(error.code, error.message.isEmpty ? "verification failed" : error.message)
    }

    /// The caller's principal. Keys and tokens are cheap to check, so they are always checked: a
    /// valid one is never refused; a failure spends its class's budget and is 429 once that is spent.
    func authenticate(_ request: Request) throws -> Principal {
        do {
            return try authenticator.authenticate(request)
        } catch {
            guard budget.charge(request.remoteAddress, error.credential) else { throw RejectionBudget.exhausted }
            throw error
        }
    }

    func authorize(_ request: Request, scope: APIKey.Scope, appUserId: String) throws {
        let principal = try authenticate(request)
        try authenticator.authorize(principal, scope: scope, appUserId: appUserId)
    }

    /// The path's appUserId, decoded and checked (see ``AppUserID``).
    static func appUserId(_ request: Request) throws -> String { try AppUserID.parameter(request) }

    static func environment(_ request: Request) throws -> Environment {
        guard let text = request.query["environment"] else { return .production }
        guard ["Production", "Sandbox", "Xcode", "LocalTesting"].contains(text) else {
            throw HTTPError(.invalidEnvironment, "environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return Environment(rawValue: text)
    }

    /// Rejects JSON nested deeper than ``maxJSONDepth`` before any decoder sees it.
    static func checkDepth(_ body: [UInt8]) throws {
        guard JSONNestingScan.nestingDepth(of: body, limit: maxJSONDepth) != nil else {
            throw HTTPError(.jsonTooDeep, "JSON nested deeper than \(maxJSONDepth) levels")
        }
    }
}
