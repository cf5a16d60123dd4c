import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import HTTPClient
import HTTPServer
import Storage

/// What `/readyz` asks: can the server do its job right now (storage reachable)?
public protocol ReadinessProbe: Sendable {
    /// Throws when not ready; the error's description is logged, not returned to the client.
    func checkReady() async throws
}

/// The router and settings of the HTTP layer (``buildApplication(configuration:clock:store:verifier:rejectionBudget:fastPaths:metrics:outbound:apiSleeper:)`` assembles one
/// for `entitled serve`, `entitled dev` and the tests).
public struct Application: Sendable {
    public let configuration: Configuration
    public let router: Router
    /// Verifies, maps and stores what Apple and the apps send, for every caller: the routes,
    /// reconciliation, backfills and imports; nil for the bare health-only application.
    public let ingest: Ingest?
    /// What `GET /metrics` reports; the HTTP server records every request into it.
    public let metrics: ServerMetrics
    /// Runs the durable jobs (backfills) when some app has `serverAPI`.
    public let jobRunner: JobRunner?
    /// Delivers events to the configured webhook endpoints; nil without any.
    public let webhooks: WebhookDispatcher?
    /// Releases held events (``EventHold``); nil when events are derived at the commit.
    public let eventReleaser: EventReleaser?

    /// Builds only `/healthz` and `/readyz`: the bare HTTP stack that `entitled bench http`
    /// measures. Neither route reads the time, so this takes no clock.
    public init(configuration: Configuration, readiness: any ReadinessProbe) {
        self.configuration = configuration
        self.metrics = ServerMetrics()
        var router = Router()
        Health.register(on: &router, readiness: readiness)
        self.router = router
        ingest = nil
        jobRunner = nil
        webhooks = nil
        eventReleaser = nil
    }

    /// Builds every route of the API: health, readiness (the ledger's), Apple's notifications, customers,
    /// catalog and admin, written against `verifier` and `ledger`; `cache` is the ledger's (``FastPaths``).
    public init(
        configuration: Configuration, verifier: any NotificationVerifying, ledger: FactLedger,
        clock: any EpochClock = SystemClock(), rejectionBudget: RejectionBudget? = nil,
        hmac: any HMACSHA256Computing = Digests(), cache: ProjectionCache = ProjectionCache(),
        metrics: ServerMetrics = ServerMetrics(), serverAPI: [String: AppStoreServerAPIClient] = [:],
        webhookTransport: (any OutboundHTTP)? = nil, googlePlay: [PlayClients] = []
    ) {
        self.configuration = configuration
        self.metrics = metrics
        var router = Router()
        Health.register(on: &router, readiness: ledger)
        let ingest = Ingest(
            configuration: configuration, verifier: verifier, ledger: ledger, clock: clock, codec: cache.codec, metrics: metrics,
            serverAPI: serverAPI)
        let api = API(
            configuration: configuration, ingest: ingest, ledger: ledger, clock: clock, budget: rejectionBudget,
            hmac: hmac, cache: cache, metrics: metrics, serverAPI: serverAPI, googlePlay: googlePlay)
        api.register(on: &router)
        self.router = router
        self.ingest = ingest
        if !serverAPI.isEmpty || !googlePlay.isEmpty {
            let backfill = Backfill(ingest: ingest)
            let consumption = ConsumptionResponder(
                configuration: configuration, serverAPI: serverAPI, ledger: ledger, clock: clock)
            let finisher = TransactionFinisher(serverAPI: serverAPI)
            let acknowledger = PlayAcknowledger(clients: googlePlay)
            let reviewer = PlayRefundReviewer(clients: googlePlay, ledger: ledger, clock: clock)
            let pricer = PlayOrderPricer(
                play: PlayIngest(ingest: ingest, clients: googlePlay, restoreBehavior: configuration.policy.restoreBehavior), clock: clock)
            jobRunner = JobRunner(
                jobs: ledger.store, clock: clock,
                handlers: [
                    Backfill.jobKind: { (job) async throws(JobFailure) in try await backfill.run(job) },
                    ConsumptionResponder.jobKind: { (job) async throws(JobFailure) in try await consumption.run(job) },
                    TransactionFinisher.jobKind: { (job) async throws(JobFailure) in try await finisher.run(job) },
                    PlayAcknowledgement.jobKind: { (job) async throws(JobFailure) in try await acknowledger.run(job) },
                    PlayRefundReview.jobKind: { (job) async throws(JobFailure) in try await reviewer.run(job) },
                    PlayOrderPrice.jobKind: { (job) async throws(JobFailure) in try await pricer.run(job) },
                    PlayRefundReview.answerJobKind: { (job) async throws(JobFailure) in try await reviewer.run(job) },
                ],
                afterPass: googlePlay.isEmpty ? nil : acknowledger.gaugeRefresher(store: ledger.store, metrics: metrics))
        } else {
            jobRunner = nil
        }
        if !configuration.webhooks.isEmpty || !configuration.integrations.isEmpty {
            webhooks = WebhookDispatcher(
                endpoints: configuration.webhooks, integrations: configuration.integrations, store: ledger.store,
                transport: webhookTransport ?? CurlHTTP(),
                clock: clock, bell: ledger.events, metrics: metrics)
        } else {
            webhooks = nil
        }
        if ledger.eventHold != nil {
            eventReleaser = EventReleaser(store: ledger.store, ledger: ledger, clock: clock)
        } else {
            eventReleaser = nil
        }
    }

    /// The HTTP server settings derived from configuration.
    public func serverConfiguration(accessLog: LogWriter? = .standardOutput) -> HTTPServer.Configuration {
        var server = HTTPServer.Configuration()
        let http = configuration.http
        server.host = configuration.listen.host
        server.port = configuration.listen.port
        server.maxBodyBytes = http.maxBodyBytes
        server.maxHeaderBytes = http.maxHeaderBytes
        server.maxURLBytes = http.maxURLBytes
        server.connectionLimit = http.connectionLimit
        server.perIPConnectionLimit = http.perIPConnectionLimit
        server.idleTimeoutSeconds = http.idleTimeoutSeconds
        server.headerTimeoutSeconds = http.headerTimeoutSeconds
        server.trustedProxies = TrustedProxies(http.trustedProxies)
        if http.threads > 0 { server.threads = http.threads }
        server.shutdownGracePeriod = .seconds(http.shutdownGraceSeconds)
        server.accessLog = http.accessLog ? accessLog : nil
        let metrics = self.metrics
        server.requestObserver = { metrics.record($0) }
        return server
    }
}

/// `GET /metrics` without credentials: the router of the `metricsListen` address, which only
/// the operator's network should reach.
public func metricsRouter(_ metrics: ServerMetrics) -> Router {
    var router = Router()
    router.add(.get, "/metrics", .inline { _ in metrics.response() })
    return router
}

/// `/healthz` (the process answers) and `/readyz` (it can serve: storage reachable).
enum Health {
    static let okBody = Array(#"{"status":"ok"}"#.utf8)
    static let readyBody = Array(#"{"status":"ready"}"#.utf8)

    static func register(on router: inout Router, readiness: any ReadinessProbe) {
        // Inline: answered on the poll thread with a constant body, the cheapest path there is.
        router.add(.get, "/healthz", .inline { _ in .json(bytes: okBody) })
        router.get("/readyz") { _ in
            do {
                try await readiness.checkReady()
                return .json(bytes: readyBody)
            } catch {
                throw HTTPError(.notReady, "storage is not reachable", headers: ["Retry-After": "5"])
            }
        }
    }
}
