import AppStore
import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

/// The console's JSON endpoints (`admin` or `console` scope; docs/openapi.yaml, "Console"): the
/// overview from the metric rollups, customer search, a customer's readable timeline, the
/// ingest's health. The page itself is ``ConsoleAssets``.
struct ConsoleRoutes: Sendable {
    /// Longest overview range, in days (ten years of daily points at most).
    static let maxOverviewDays: Int64 = 3_700
    /// Customers per search page when `limit` is absent, and its maximum.
    static let defaultSearchLimit = 25
    static let maxSearchLimit = 100
    /// The window the health page covers.
    static let healthWindow: Int64 = 24 * 3_600_000
    /// How many of a customer's newest webhook deliveries the customer page shows.
    static let customerDeliveries = 50

    let gate: AccessGate
    let apple: AppleCalls
    let auditor: SupportAuditor
    /// Brings a transaction an order lookup finds into the ledger.
    let ingest: Ingest
    let ledger: FactLedger
    let configuration: Configuration
    /// The policy every answer is evaluated with: the entitlements a grant may give.
    let policy: Policy
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/metrics/overview") { try await routes.metricsOverview($0) }
        router.get("/v1/console/customers") { try await routes.searchCustomers($0) }
        router.get("/v1/console/customers/{appUserId}/timeline") { try await routes.customerTimeline($0) }
        router.get("/v1/console/health") { try await routes.consoleHealth($0) }
        router.get("/v1/console/session") { try await routes.consoleSession($0) }
        ConsoleAssets.register(on: &router)
    }

    /// `GET /v1/metrics/overview?from=YYYY-MM-DD&to=YYYY-MM-DD&interval=day|week|month&environment=…`.
    func metricsOverview(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let from = try Self.day(request, "from")
        let to = try Self.day(request, "to")
        guard from <= to else { throw HTTPError(.invalidRequest, "from is after to") }
        guard to - from < Self.maxOverviewDays else {
            throw HTTPError(.invalidRequest, "the range is longer than \(Self.maxOverviewDays) days")
        }
        let interval = try OverviewInterval(request.query["interval"] ?? "day")
        let environment = try RequestInput.environment(request)
        let store = auditor.consoleStore
        let rollup = try await Problems.consoleRead {
            try await store.metricRollup(environment: environment.rawValue, fromDay: from, toDay: to)
        }
        return try .json(
            OverviewBody(
                rollup: rollup, from: from, to: to, interval: interval, environment: environment, console: configuration.console))
    }

    /// A `YYYY-MM-DD` query parameter as days since the epoch.
    static func day(_ request: Request, _ name: String) throws -> Int64 {
        guard let text = request.query[name] else { throw HTTPError(.missingParameter, "\(name) is required (YYYY-MM-DD)") }
        guard let day = OverviewBody.parseDay(text) else {
            throw HTTPError(.invalidRequest, "\(name) is not a date YYYY-MM-DD between 2000 and 2199")
        }
        return day
    }

    /// `GET /v1/console/customers?q=…&after=…&limit=…`, or `?orderId=…` (``searchByOrder(_:orderId:actor:)``).
    func searchCustomers(_ request: Request) async throws -> Response {
        if let orderId = request.query["orderId"] {
            return try await searchByOrder(request, orderId: orderId, actor: try gate.requireKey(request, scope: .console))
        }
        try gate.require(request, scope: .console)
        let query = request.query["q"] ?? ""
        guard query.unicodeScalars.count <= AppUserID.maxScalars else {
            throw HTTPError(.invalidRequest, "q is longer than \(AppUserID.maxScalars) characters")
        }
        var limit = Self.defaultSearchLimit
        if let text = request.query["limit"] {
            guard let parsed = Int(text), (1...Self.maxSearchLimit).contains(parsed) else {
                throw HTTPError(.invalidLimit, "limit is 1…\(Self.maxSearchLimit)")
            }
            limit = parsed
        }
        let after = request.query["after"]
        let store = auditor.consoleStore
        let found = try await Problems.consoleRead { try await store.searchCustomers(query, after: after, limit: limit + 1) }
        let page = Array(found.prefix(limit))
        return try .json(
            CustomerSearchBody(
                customers: page.map(CustomerSearchBody.Item.init),
                nextAfter: found.count > limit ? page.last?.appUserId : nil))
    }

    /// `GET /v1/console/customers/{appUserId}/timeline`: one row per event, newest first, the
    /// customer's newest webhook deliveries and support actions.
    func customerTimeline(_ request: Request) async throws -> Response {
        let appUserId = try RequestInput.appUserId(request)
        try gate.require(request, scope: .console)
        let ledger = self.ledger
        guard try await Problems.consoleRead({ try await ledger.store.customer(appUserId: appUserId) }) != nil else {
            throw HTTPError(.customerNotFound, "no such customer")
        }
        let facts = try await Problems.consoleRead { try await ledger.store.facts(appUserId: appUserId, projector: ledger.projector) }
        let events = ConsoleTimeline.events(facts, encode: ledger.projector.encode)
        let endpoints = configuration.deliveryEndpoints
        var deliveries: [WebhookDelivery] = []
        if !endpoints.isEmpty {
            deliveries = try await Problems.consoleRead {
                try await ledger.store.deliveries(customerKey: appUserId, endpoints: endpoints, limit: Self.customerDeliveries)
            }
        }
        let store = auditor.consoleStore
        let actions = try await Problems.consoleRead { try await store.supportActions(appUserId: appUserId, limit: Self.customerSupportActions) }
        return try .json(
            TimelineBody(
                appUserId: appUserId, events: events.reversed(), deliveries: deliveries.map(DeliveryBody.init),
                supportActions: actions.map(SupportActionBody.init)))
    }

    /// `GET /v1/console/health`: the last 24 hours of ingest, each webhook endpoint's deliveries and each export's state.
    func consoleHealth(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let now = clock.nowMilliseconds()
        let store = auditor.consoleStore
        let health = try await Problems.consoleRead { try await store.ingestHealth(since: now - Self.healthWindow, now: now) }
        let reconciled = Set(configuration.apps.filter { apple.serverAPI[$0.bundleId] != nil }.map(\.bundleId))
        let endpoints = configuration.deliveryEndpoints
        var webhooks: [WebhookEndpointStatus] = []
        if !endpoints.isEmpty {
            webhooks = try await Problems.consoleRead { try await ledger.store.webhookStatus(endpoints: endpoints) }
        }
        var body = HealthBody(health: health, now: now, reconciledApps: reconciled, webhooks: webhooks)
        if !configuration.exports.isEmpty {
            let statuses = try await Problems.consoleRead { try await ledger.store.exportStatuses(now: now) }
            body.exports = HealthBody.exports(configuration.exports.map(\.destination.description), statuses: statuses)
        }
        if !configuration.playApps.isEmpty {
            body.playUnacknowledged = try await Problems.consoleRead {
                try await PlayAcknowledger.unacknowledgedNearDeadline(ledger.store, now: now)
            }
            body.playRefundReviewsNearDeadline = try await Problems.consoleRead {
                try await PlayRefundReviewer.unansweredNearDeadline(ledger.store, now: now)
            }
        }
        return try .json(body)
    }
}

/// `interval`: how overview points are grouped.
enum OverviewInterval: String {
    case day, week, month

    init(_ text: String) throws {
        guard let value = Self(rawValue: text) else { throw HTTPError(.invalidRequest, "interval is day, week or month") }
        self = value
    }
}
