import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Reading a customer: the answer (`read` scope, or the customer's own token), its history and
/// what its app's storefront may sell it.
struct CustomerRoutes: Sendable {
    let gate: AccessGate
    let answers: CustomerAnswers
    let ledger: FactLedger
    let configuration: Configuration
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/customers/{appUserId}", fast: { try routes.getCustomerNow($0) }) { try await routes.getCustomer($0) }
        router.get("/v1/customers/{appUserId}/history") { try await routes.history($0) }
        router.get("/v1/customers/{appUserId}/products") { try await routes.customerProducts($0) }
    }

    /// `GET /v1/customers/{appUserId}[?environment=Sandbox]`: the grant environments merged, or
    /// the one the query names.
    func getCustomer(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        let context = try answers.context(request, now: now)
        let (bytes, nextChangeAt) = try await answers.answer(appUserId: appUserId, context: context)
        return answers.response(bytes, nextChangeAt: nextChangeAt, now: now)
    }

    /// `GET /v1/customers/{appUserId}` on the poll thread, when the ledger holds a rendered answer
    /// that still holds and can read it at once; nil sends the request to ``getCustomer(_:)``.
    func getCustomerNow(_ request: Request) throws -> Response? {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        let now = clock.nowMilliseconds()
        let context = try answers.context(request, now: now)
        // A storage error here is left to the slow path, which answers it properly.
        guard let rendered = try? ledger.renderedCustomerNow(appUserId: appUserId, context: context) else { return nil }
        return answers.response(rendered.body(serverTime: now), nextChangeAt: rendered.nextChangeAt, now: now)
    }

    /// `GET /v1/customers/{appUserId}/history?cursor=…&limit=…`.
    func history(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        let (storageCursor, limit) = try API.historyPaging(request)
        let page = try await Problems.store(invalidRequest: API.invalidCursor) { () async throws(StorageError) in
            try await ledger.history(appUserId: appUserId, cursor: storageCursor, limit: limit)
        }
        guard let page else { throw HTTPError(.customerNotFound, "no such customer") }
        return try .json(
            HistoryPageBody(
                appUserId: appUserId, items: page.entries.map(HistoryItemBody.init),
                nextCursor: page.nextCursor.map(HistoryCursor.wrap)))
    }

    /// `GET /v1/customers/{appUserId}/products[?bundleId=…&storefront=…]`: the app's products the
    /// customer's storefront sells, each with whether buying it makes sense now.
    func customerProducts(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.authorize(request, scope: .read, appUserId: appUserId)
        let app: App
        if let bundleId = request.query["bundleId"] {
            guard let found = configuration.app(bundleId: bundleId) else { throw HTTPError(.appNotFound, "no app with this bundleId") }
            app = found
        } else {
            guard configuration.apps.count == 1, let only = configuration.apps.first else {
                throw HTTPError(.invalidRequest, "bundleId is required when several apps are configured")
            }
            app = only
        }
        let asked = try RequestInput.storefront(request)
        let now = clock.nowMilliseconds()
        let context = ledger.answerContext(now: now)
        let snapshot = try await Problems.store { () async throws(StorageError) in
            try await ledger.customer(appUserId: appUserId, context: context)
        }
        return try .json(CustomerProductsBody(app: app, appUserId: appUserId, state: snapshot.state, storefront: asked))
    }
}
