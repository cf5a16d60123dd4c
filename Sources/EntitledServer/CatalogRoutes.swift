import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// What is sold and what is known of one subscription: an app's configured catalog (`read`, or a
/// customer token) and a subscription's record (`admin`).
struct CatalogRoutes: Sendable {
    let gate: AccessGate
    let configuration: Configuration
    let ledger: FactLedger
    /// The policy every answer is evaluated with (``CustomerAnswers/policy``).
    let policy: Policy
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/apps/{bundleId}/products") { try await routes.products($0) }
        router.get("/v1/subscriptions/{originalTransactionId}") { try await routes.subscription($0) }
    }

    /// `GET /v1/apps/{bundleId}/products[?storefront=USA]`.
    func products(_ request: Request) async throws -> Response {
        let principal = try gate.authenticate(request)
        if case .apiKey = principal { try gate.authenticator.authorize(principal, scope: .read, appUserId: nil) }
        let bundleId = try request.parameter("bundleId")
        guard let app = configuration.app(bundleId: bundleId) else {
            throw HTTPError(.appNotFound, "no app with this bundleId")
        }
        return try .json(CatalogBody(app: app, storefront: try RequestInput.storefront(request)))
    }

    /// `GET /v1/subscriptions/{originalTransactionId}[?environment=…]` (admin).
    func subscription(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .admin)
        let originalTransactionId = try request.parameter("originalTransactionId")
        let now = clock.nowMilliseconds()
        let record = try await Problems.store { () async throws(StorageError) in
            try await ledger.subscription(originalTransactionId: originalTransactionId)
        }
        guard let record else {
            throw HTTPError(.subscriptionNotFound, "nothing is known about this subscription")
        }
        let environment =
            request.query["environment"] != nil
            ? try RequestInput.environment(request) : (record.facts.first?.environment ?? .production)
        let state = evaluate(facts: record.facts, policy: policy, now: now, environment: environment)
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
}

/// `GET /metrics` on the API's own address: an API key with the `metrics` scope.
struct MetricsRoutes: Sendable {
    let gate: AccessGate
    let metrics: ServerMetrics

    func register(on router: inout Router) {
        let routes = self
        router.add(.get, "/metrics", .inline { try routes.metricsPage($0) })  // quick, no storage
    }

    func metricsPage(_ request: Request) throws -> Response {
        try gate.require(request, scope: .metrics)
        return metrics.response()
    }
}
