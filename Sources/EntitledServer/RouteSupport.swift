import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import JSONCoding
import Storage

// The small helpers the route groups hold: who is calling (``AccessGate``), what the request
// says (``RequestInput``), and the customer's answer (``CustomerAnswers``).

/// Who is calling. Keys and tokens are cheap to check, so they are always checked: a valid one is
/// never refused; a failure spends its class's budget and is 429 once that is spent.
struct AccessGate: Sendable {
    let authenticator: Authenticator
    let budget: RejectionBudget

    /// The caller's principal.
    func authenticate(_ request: Request) throws -> Principal {
        do {
            return try authenticator.authenticate(request)
        } catch {
            guard budget.charge(request.remoteAddress, error.credential) else { throw RejectionBudget.exhausted }
            throw error
        }
    }

    /// A key or token that may act with `scope` on `appUserId`.
    func authorize(_ request: Request, scope: APIKey.Scope, appUserId: String) throws {
        let principal = try authenticate(request)
        try authenticator.authorize(principal, scope: scope, appUserId: appUserId)
    }

    /// A principal with `scope` over every customer (`admin`, `console`, `metrics`, `read`).
    func require(_ request: Request, scope: APIKey.Scope) throws {
        try authenticator.authorize(try authenticate(request), scope: scope, appUserId: nil)
    }

    /// An API key with `scope` (customer tokens may not act on other ids or as an operator); its name.
    func requireKey(_ request: Request, scope: APIKey.Scope) throws -> String {
        let principal = try authenticate(request)
        guard case .apiKey(let name, _) = principal else {
            throw HTTPError(.forbidden, "this endpoint needs an API key with the '\(scope.rawValue)' scope")
        }
        try authenticator.authorize(principal, scope: scope, appUserId: nil)
        return name
    }
}

/// What a request says, checked: path parameters, queries and bodies shared by the route groups.
enum RequestInput {
    /// The path's appUserId, decoded and checked (see ``AppUserID``).
    static func appUserId(_ request: Request) throws -> String { try AppUserID.parameter(request) }

    /// `?environment=` (Production when absent).
    static func environment(_ request: Request) throws -> Environment {
        guard let text = request.query["environment"] else { return .production }
        guard ["Production", "Sandbox", "Xcode", "LocalTesting"].contains(text) else {
            throw HTTPError(.invalidEnvironment, "environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return Environment(rawValue: text)
    }

    /// `?storefront=` as an upper-case ISO 3166-1 alpha-3 code, nil when absent.
    static func storefront(_ request: Request) throws(HTTPError) -> String? {
        guard let storefront = request.query["storefront"] else { return nil }
        guard storefront.count == 3, storefront.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw HTTPError(.invalidStorefront, "storefront must be an ISO 3166-1 alpha-3 code")
        }
        return storefront.uppercased()
    }

    /// Rejects JSON nested deeper than ``API/maxJSONDepth`` before any decoder sees it.
    static func checkDepth(_ body: [UInt8]) throws {
        guard JSONNestingScan.nestingDepth(of: body, limit: API.maxJSONDepth) != nil else {
            throw HTTPError(.jsonTooDeep, "JSON nested deeper than \(API.maxJSONDepth) levels")
        }
    }

    /// The JSON body as `type`, after the nesting check.
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request) throws -> T {
        try checkDepth(request.body)
        return try request.decodeJSON(type)
    }

    /// `response`, never cached.
    static func noStore(_ response: Response) -> Response {
        var response = response
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}

/// The customer's answer (`GET /v1/customers/{appUserId}`'s body), as every route that returns it
/// renders it.
struct CustomerAnswers: Sendable {
    let ledger: FactLedger
    /// Encoded answers, reused while unchanged.
    let cache: ProjectionCache
    /// The one policy every answer is evaluated with: merged from every configured app (customers
    /// are not per app), the policy the ledger's projections use too.
    let policy: Policy
    /// The environments an answer merges unless `?environment=` names one
    /// (``EntitledConfig/Configuration/grantEnvironments``), the ones the ledger's stored answers merge too.
    let grantEnvironments: [Environment]
    /// The longest a client may cache an answer.
    let cacheTTLSeconds: Int

    init(configuration: Configuration, ledger: FactLedger, cache: ProjectionCache) {
        self.ledger = ledger
        self.cache = cache
        policy = configuration.policy
        grantEnvironments = configuration.grantEnvironments
        cacheTTLSeconds = configuration.cacheTTLSeconds
    }

    /// The answer a plain `GET` gives: the grant environments merged.
    func merged(now: Int64) -> EvaluationContext {
        EvaluationContext(policy: policy, environments: grantEnvironments, now: now)
    }

    /// What an answer merges: the environment `?environment=` names, else the grant environments.
    func context(_ request: Request, now: Int64) throws -> EvaluationContext {
        guard request.query["environment"] != nil else { return merged(now: now) }
        return EvaluationContext(policy: policy, environment: try RequestInput.environment(request), now: now)
    }

    /// The customer's answer at `context.now`: the projection's rendered answer when it still holds
    /// (the hot read: no decoding, no encoding), else evaluated from the facts.
    func answer(appUserId: String, context: EvaluationContext) async throws -> (body: [UInt8], nextChangeAt: Int64?) {
        if let rendered = try await Problems.store({ () async throws(StorageError) in
            try await ledger.renderedCustomer(appUserId: appUserId, context: context)
        }) {
            return (rendered.body(serverTime: context.now), rendered.nextChangeAt)
        }
        let snapshot = try await Problems.store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: context)
        }
        let body = CustomerBody(customer: snapshot.customer, state: snapshot.state, now: context.now)
        return (try cache.bytes(for: body), snapshot.state.nextStatusChangeAt)
    }

    /// An answer, cacheable by the client until the TTL or the answer's next change.
    func response(_ bytes: [UInt8], nextChangeAt: Int64?, now: Int64) -> Response {
        var response = Response.json(bytes: bytes)
        let maxAge = CustomerBody.maxAge(nextChangeAt: nextChangeAt, now: now, ttl: cacheTTLSeconds)
        response.headers.set("Cache-Control", "private, max-age=\(maxAge)")
        return response
    }

    /// The answer right after a write (no client cache).
    func written(appUserId: String, context: EvaluationContext) async throws -> Response {
        RequestInput.noStore(.json(bytes: try await answer(appUserId: appUserId, context: context).body))
    }
}
