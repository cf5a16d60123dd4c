import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import Entitlements
import HTTPServer
import Storage

/// The HTTP API (docs/openapi.yaml): the route groups, built from their collaborators and
/// registered in one place. Each group (``AppleNotificationRoutes``, ``CustomerRoutes``, …) holds
/// only what it uses and parses, checks, calls and answers — nothing more.
///
/// Every decision about entitlements is the engine's; every durable effect is the ledger's; every
/// signature check is the verifier's; what Apple and the apps send is stored through ``Ingest``.
/// Apple's endpoints need no key (the signature or shared secret is the proof); customer
/// endpoints need `read` (GET) or `write` (POST), admin ones `admin`.
public struct API: Sendable {
    /// Apple's notification bodies are at most this large (413 beyond).
    public static let maxNotificationBytes = 256 * 1024
    /// Largest receipt body accepted (receipts of apps with long histories reach a few hundred KiB).
    public static let maxReceiptBodyBytes = 1024 * 1024
    /// Deepest JSON nesting accepted in request bodies (400 `JSON_TOO_DEEP` beyond).
    public static let maxJSONDepth = 32
    /// History page size when `limit` is absent, and its maximum.
    public static let defaultHistoryLimit = 50
    public static let maxHistoryLimit = 200

    let apple: AppleNotificationRoutes
    let customers: CustomerRoutes
    let purchases: PurchaseRoutes
    let offers: OfferRoutes
    let consumables: ConsumableRoutes
    let catalog: CatalogRoutes
    let events: EventRoutes
    let support: SupportRoutes
    let webhooks: WebhookRoutes
    let customerAdmin: CustomerAdminRoutes
    let anonymousCustomers: AnonymousCustomerRoutes
    let console: ConsoleRoutes
    let charts: ChartRoutes
    let metricsPage: MetricsRoutes
    /// Apple's retention-messaging requests and the save-rate report.
    let retention: RetentionRoutes
    /// The console's read-only view of the retention messages set up at Apple.
    let retentionSetup: RetentionSetupRoutes
    let googlePlay: GooglePlayRoutes
    let attributes: AttributeRoutes
    let offerings: OfferingRoutes
    let customerOfferings: CustomerOfferingRoutes
    let experiments: ExperimentRoutes
    let offeringHistory: OfferingHistoryRoutes
    let refundReviews: RefundReviewRoutes

    init(
        configuration: Configuration, ingest: Ingest, ledger: FactLedger, clock: any EpochClock, budget: RejectionBudget? = nil,
        hmac: any HMACSHA256Computing = Digests(), cache: ProjectionCache = ProjectionCache(), metrics: ServerMetrics = ServerMetrics(),
        serverAPI: [String: AppStoreServerAPIClient] = [:], googlePlay: [PlayClients] = []
    ) {
        let budget = budget ?? RejectionBudget(clock: clock)
        let gate = AccessGate(
            authenticator: Authenticator(
                apiKeys: configuration.apiKeys, customerTokens: configuration.customerTokens, hmac: hmac, clock: clock),
            budget: budget)
        let answers = CustomerAnswers(configuration: configuration, ledger: ledger, cache: cache)
        let aliases = AliasMerger(ledger: ledger, answers: answers)
        let refusals = Refusals(ingest: ingest, budget: budget, metrics: metrics)
        let appleCalls = AppleCalls(configuration: configuration, serverAPI: serverAPI)
        let auditor = SupportAuditor(ledger: ledger, clock: clock)
        let policy = configuration.policy
        apple = AppleNotificationRoutes(
            ingest: ingest, refusals: refusals, budget: budget, clock: clock, codec: cache.codec, metrics: metrics)
        customers = CustomerRoutes(gate: gate, answers: answers, ledger: ledger, configuration: configuration, clock: clock)
        purchases = PurchaseRoutes(gate: gate, ingest: ingest, refusals: refusals, budget: budget, answers: answers, clock: clock)
        offers = OfferRoutes(
            gate: gate, signers: OfferRoutes.offerSigners(configuration),
            offerLimiter: OfferSigningLimiter(configuration.offerSigning, clock: clock), answers: answers, ledger: ledger,
            configuration: configuration, clock: clock)
        consumables = ConsumableRoutes(gate: gate, ledger: ledger, configuration: configuration, clock: clock)
        catalog = CatalogRoutes(gate: gate, configuration: configuration, ledger: ledger, policy: policy, clock: clock)
        events = EventRoutes(gate: gate, ledger: ledger)
        support = SupportRoutes(
            gate: gate, apple: appleCalls, auditor: auditor, ledger: ledger, answers: answers, clock: clock)
        webhooks = WebhookRoutes(gate: gate, ledger: ledger, configuration: configuration, clock: clock)
        customerAdmin = CustomerAdminRoutes(gate: gate, ledger: ledger, aliases: aliases, policy: policy, clock: clock)
        anonymousCustomers = AnonymousCustomerRoutes(
            gate: gate, appKeys: AppKeyGate(configuration: configuration, hmac: hmac, clock: clock), budget: budget, ledger: ledger,
            answers: answers, aliases: aliases, clock: clock)
        console = ConsoleRoutes(
            gate: gate, apple: appleCalls, auditor: auditor, ingest: ingest, ledger: ledger, configuration: configuration,
            policy: policy, clock: clock)
        charts = ChartRoutes(
            gate: gate, report: ChartReport(store: ledger.store, console: configuration.console, rendering: ChartRendering(fastPaths: cache.codec.fastPaths)),
            clock: clock)
        metricsPage = MetricsRoutes(gate: gate, metrics: metrics)
        retention = RetentionRoutes(
            configuration: configuration, verifier: ingest.verifier, ledger: ledger, signers: offers.signers,
            gate: gate, clock: clock, codec: cache.codec, metrics: metrics)
        retentionSetup = RetentionSetupRoutes(
            apps: configuration.apps, clients: serverAPI, gate: gate)
        self.googlePlay = GooglePlayRoutes(
            gate: gate, play: PlayIngest(ingest: ingest, clients: googlePlay, restoreBehavior: policy.restoreBehavior),
            refusals: refusals, budget: budget, answers: answers, clock: clock)
        attributes = AttributeRoutes(gate: gate, ledger: ledger, clock: clock)
        let paywall = PaywallCache(ledger: ledger, clock: clock)
        offerings = OfferingRoutes(
            gate: gate, changes: OfferingChanges(ledger: ledger, cache: paywall), cache: paywall,
            products: Set(configuration.apps.flatMap(\.products).map(\.productId)), clock: clock)
        customerOfferings = CustomerOfferingRoutes(
            gate: gate,
            offerings: CustomerOfferings(
                ledger: ledger, cache: paywall, answers: answers, clock: clock, experiments: ExperimentExposure(ledger: ledger)))
        experiments = ExperimentRoutes(
            gate: gate, changes: ExperimentChanges(changes: OfferingChanges(ledger: ledger, cache: paywall)), cache: paywall,
            results: ExperimentResultsReader(ledger: ledger, environments: answers.grantEnvironments), clock: clock)
        offeringHistory = OfferingHistoryRoutes(gate: gate, history: OfferingHistory(ledger: ledger))
        refundReviews = RefundReviewRoutes(
            gate: gate, answers: RefundReviewAnswers(store: ledger.store, packageNames: Set(googlePlay.map(\.app.packageName))), clock: clock)
    }

    /// Registers every endpoint of the API (health and readiness are registered by ``Application``).
    /// The order is the order a path's methods are listed in a 405's `Allow`.
    public func register(on router: inout Router) {
        apple.register(on: &router)
        customers.register(on: &router)
        purchases.register(on: &router)
        offers.register(on: &router)
        consumables.register(on: &router)
        catalog.register(on: &router)
        events.register(on: &router)
        support.register(on: &router)
        webhooks.register(on: &router)
        customerAdmin.register(on: &router)
        anonymousCustomers.register(on: &router)
        console.register(on: &router)
        charts.register(on: &router)
        retention.register(on: &router)
        retentionSetup.register(on: &router)
        metricsPage.register(on: &router)
        googlePlay.register(on: &router)
        attributes.register(on: &router)
        offerings.register(on: &router)
        customerOfferings.register(on: &router)
        experiments.register(on: &router)
        offeringHistory.register(on: &router)
        refundReviews.register(on: &router)
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
}
