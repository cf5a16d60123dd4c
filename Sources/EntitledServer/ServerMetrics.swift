import AppStore
import EntitledConfig
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import HTTPServer
import Storage
import Synchronization

/// The server's metrics (`GET /metrics`, docs/operations.md lists them): one registry and the
/// families every part records into. Built once by the composition root and handed to the HTTP
/// server (requests), the ledger (commits) and storage (group commits, projection counts).
public final class ServerMetrics: LedgerObserver {
    /// The version `entitled_build_info` reports (and `entitled --version` prints).
    public static let version = "0.1.0"

    public let registry = MetricsRegistry()

    let httpRequests: Counter
    let httpDuration: Histogram
    let notifications: Counter
    let unknownAppleValues: Counter
    let verificationDuration: Histogram
    let ledgerCommitDuration: Histogram
    let ledgerGroupSize: Histogram
    let replicaReads: Counter
    let rollupJournalFolds: Counter
    let rollupJournalRowsFolded: Counter
    let projectionLag: Histogram
    let customers: Gauge
    let subscriptions: Gauge
    /// Set once the gauges hold the stored counts; changes before that are not counted.
    private let projectionsCounted = Atomic<Bool>(false)
    /// When each app's and environment's reconciliation watermark last moved (its lag is
    /// `time() - value`), and passes by outcome.
    let reconcileWatermark: Gauge
    let reconcilePasses: Counter
    let exportRuns: Counter
    let exportRows: Counter
    let exportLastSuccess: Gauge
    /// Webhook attempts by endpoint (its index in `webhooks`, or an integration's identity) and outcome, pending deliveries per
    /// endpoint, and each attempt's latency.
    let webhookDeliveries: Counter
    let webhookPending: Gauge
    /// Play purchases 48 to 72 hours old whose acknowledgement has not succeeded.
    let playUnacknowledged: Gauge
    let playRefundReviewsNearDeadline: Gauge
    let playVoidedPolls: Counter
    let playVoidedFound: Counter
    let webhookAttemptDuration: Histogram
    /// Apple's retention-messaging requests by how they were answered.
    let retentionRequests: Counter

    /// Seconds buckets for request, verification and commit latencies.
    static let latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public init() {
        httpRequests = registry.counter(
            "entitled_http_requests_total", "HTTP requests answered, by method, route pattern and status.",
            labels: ["method", "route", "status"])
        httpDuration = registry.histogram(
            "entitled_http_request_duration_seconds", "Time from request headers to the answer's completion, by route.",
            labels: ["method", "route"], buckets: Self.latencyBuckets)
        notifications = registry.counter(
            "entitled_notifications_total",
            "Apple notifications received, by version, type, subtype and outcome (accepted, duplicate, rejected with code).",
            labels: ["version", "type", "subtype", "outcome", "code"])
        unknownAppleValues = registry.counter(
            "entitled_unknown_apple_values_total",
            "Values in verified Apple payloads this server does not know (accepted, recorded raw, mapped to nothing new), "
                + "by payload kind (notification, transaction, renewalInfo) and field (notificationType, subtype, or an unknown member's name).",
            labels: ["kind", "field"])
        verificationDuration = registry.histogram(
            "entitled_verification_duration_seconds", "Time to verify a signed payload and its certificate chain, by kind.",
            labels: ["kind"], buckets: Self.latencyBuckets)
        ledgerCommitDuration = registry.histogram(
            "entitled_ledger_commit_duration_seconds",
            "Time an ingest waits for its durable commit (queue, transaction with projections, fsync).",
            buckets: Self.latencyBuckets)
        ledgerGroupSize = registry.histogram(
            "entitled_ledger_group_commit_size", "Write transactions the storage writer groups into one commit.",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256])
        replicaReads = registry.counter(
            "entitled_replica_reads_total",
            "Reads with read replicas configured, by where they ran (replica, or primary: no replica had this process's last commit or answered).",
            labels: ["served_by"])
        rollupJournalFolds = registry.counter(
            "entitled_rollup_journal_folds_total",
            "Folds of the rollup journal into the rollups this process ran, by outcome (ok, failed: the rows wait for the next).",
            labels: ["outcome"])
        rollupJournalRowsFolded = registry.counter(
            "entitled_rollup_journal_rows_folded_total", "Journal rows (one per committed transaction) this process folded into the rollups.")
        projectionLag = registry.histogram(
            "entitled_projection_lag_seconds",
            "From a V2 notification's signedDate to its projections committed (Apple's delivery delay plus ours).",
            buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 21600, 86400, 604800])
        reconcileWatermark = registry.gauge(
            "entitled_reconcile_watermark_timestamp_seconds",
            "Up to when Apple's notification history is reconciled (Unix seconds), by app and environment; the lag is time() minus it.",
            labels: ["app", "environment"])
        reconcilePasses = registry.counter(
            "entitled_reconcile_passes_total", "Reconciliation passes, by app, environment and outcome (ok, failed, skipped).",
            labels: ["app", "environment", "outcome"])
        exportRuns = registry.counter(
            "entitled_export_runs_total",
            "Scheduled export runs this process claimed, by export (its destination) and outcome (ok, failed).",
            labels: ["export", "outcome"])
        exportRows = registry.counter(
            "entitled_export_rows_total", "Rows written by committed export runs, by export and table.", labels: ["export", "table"])
        exportLastSuccess = registry.gauge(
            "entitled_export_last_success_timestamp_seconds",
            "When this process last committed a run of the export (Unix seconds); its data reaches up to 5 minutes before.",
            labels: ["export"])
        webhookDeliveries = registry.counter(
            "entitled_webhook_deliveries_total",
            "Webhook and integration delivery attempts, by endpoint (index in webhooks, or the integration) and outcome (delivered, retried, failed).",
            labels: ["endpoint", "outcome"])
        webhookPending = registry.gauge(
            "entitled_webhook_pending_deliveries", "Webhook deliveries not yet delivered or failed, by endpoint.", labels: ["endpoint"])
        playUnacknowledged = registry.gauge(
            "entitled_play_unacknowledged_purchases",
            "Google Play purchases 48 to 72 hours old not yet acknowledged by the server (Google refunds them at 72 hours).")
        playRefundReviewsNearDeadline = registry.gauge(
            "entitled_play_refund_reviews_near_deadline",
            "Google Play refund reviews 18 to 24 hours old the server has not yet answered (Google takes answers for 24 hours).")
        playVoidedPolls = registry.counter(
            "entitled_play_voided_polls_total", "Voided-purchases passes this process ran, by app and outcome (ok, failed).",
            labels: ["app", "outcome"])
        playVoidedFound = registry.counter(
            "entitled_play_voided_found_total",
            "Voided purchases the poll stored because no notification had told of them, by app.", labels: ["app"])
        webhookAttemptDuration = registry.histogram(
            "entitled_webhook_attempt_duration_seconds", "Time of one webhook delivery attempt until its answer or failure, by endpoint.",
            labels: ["endpoint"], buckets: Self.latencyBuckets + [30, 60])
        retentionRequests = registry.counter(
            "entitled_retention_requests_total",
            "Retention-messaging requests by answer (message, alternateProduct, promotionalOffer, none, refused, failed).",
            labels: ["answer"])
        customers = registry.gauge(
            "entitled_customers", "Projected customers by state (active: an active entitlement; inactive: purchases, none active; new: none).",
            labels: ["state"])
        subscriptions = registry.gauge(
            "entitled_subscriptions", "Projected subscriptions by status.", labels: ["status"])
        registry.gauge("entitled_build_info", "The running build.", labels: ["version"]).set([Self.version], 1)
    }

    // MARK: - Recording

    /// A method as its label: methods outside the known ones are counted as `other` (the method is
    /// the client's word, so it must not make series).
    private static func label(_ method: HTTPMethod) -> HTTPMethod {
        switch method.rawValue {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": method
        default: HTTPMethod("other")
        }
    }

    /// For ``HTTPServer/Configuration/requestObserver``: on the poll thread, once per request.
    public func record(_ request: CompletedRequest) {
        let key = RouteKey(method: Self.label(request.method), route: request.route)
        let series = routeSeries.withLock { $0[key] } ?? resolve(key)
        series.duration.observe(request.seconds)
        series.requests(status: request.status).add()
    }

    /// A request's method and matched route: few (the router's routes, the methods they answer
    /// and the misses), so their series are resolved once each (``RouteSeries``).
    private struct RouteKey: Hashable {
        var method: HTTPMethod
        var route: String?
    }

    /// The HTTP series of one method and route, looked up in the families on its first request:
    /// every later one finds them in one small table and updates them under their own locks,
    /// instead of building label arrays and hashing them in both families.
    private final class RouteSeries: Sendable {
        let labels: [String]
        let duration: Histogram.Cell
        private let requests: Counter
        private let byStatus = Mutex<[Int: Counter.Cell]>([:])

        init(labels: [String], requests: Counter, duration: Histogram) {
            self.labels = labels
            self.requests = requests
            self.duration = duration.cell(labels)
        }

        func requests(status: Int) -> Counter.Cell {
            if let cell = byStatus.withLock({ $0[status] }) { return cell }
            let cell = requests.cell(labels + [String(status)])
            byStatus.withLock { $0[status] = cell }
            return cell
        }
    }

    private let routeSeries = Mutex<[RouteKey: RouteSeries]>([:])

    private func resolve(_ key: RouteKey) -> RouteSeries {
        let series = RouteSeries(
            labels: [key.method.rawValue, key.route ?? "unmatched"], requests: httpRequests, duration: httpDuration)
        return routeSeries.withLock { table in
            if let existing = table[key] { return existing }
            // Bounded like the families (routes are the router's, methods the known ones).
            if table.count < MetricsRegistry.maxSeries { table[key] = series }
            return series
        }
    }

    /// An accepted or duplicate notification; `type` and `subtype` are Apple's (verified).
    func notificationIngested(version: String, type: String?, subtype: String?, status: IngestResult.Status) {
        let outcome = status.rawValue
        notifications.add([version, Self.bounded(type), Self.bounded(subtype), outcome, ""])
        // Apple adds types every year: one this build does not know is counted, so operators see
        // it before they read the release notes; the value itself is in the ledger.
        if version == "2", let type, !NotificationType.allDocumented.contains(NotificationType(rawValue: type)) {
            unknownAppleValues.add(["notification", "notificationType"])
        }
        if version == "2", let subtype, !NotificationSubtype.allDocumented.contains(NotificationSubtype(rawValue: subtype)) {
            unknownAppleValues.add(["notification", "subtype"])
        }
    }

    /// Members of verified payloads this build does not know (``UnknownFields``), one count each.
    func unknownFieldsSeen(_ seen: [UnknownFields.Seen]) {
        for item in seen { unknownAppleValues.add([item.kind, Self.bounded(item.field)]) }
    }

    /// A notification refused with `code` (its type is unknown: it did not verify).
    func notificationRejected(version: String, code: String) {
        notifications.add([version, "", "", "rejected", code])
    }

    /// Label values from payloads are cut short (verified, so from Apple's small sets, but bounded anyway).
    private static func bounded(_ text: String?) -> String { String((text ?? "").prefix(64)) }

    // MARK: - LedgerObserver

    public func groupCommitted(writes: Int) { ledgerGroupSize.observe([], Double(writes)) }

    public func readsRouted(_ reads: Int, onReplica: Bool) {
        replicaReads.add([onReplica ? "replica" : "primary"], Double(reads))
    }

    public func rollupJournalFolded(rows: Int) {
        rollupJournalFolds.add(["ok"])
        rollupJournalRowsFolded.add([], Double(rows))
    }

    public func rollupJournalFoldFailed() { rollupJournalFolds.add(["failed"]) }

    public func projectionsChanged(_ change: ProjectionTally) {
        guard projectionsCounted.load(ordering: .acquiring) else { return }
        for (state, delta) in change.customers { customers.add([state], Double(delta)) }
        for (status, delta) in change.subscriptions { subscriptions.add([status], Double(delta)) }
    }

    /// Sets the projection gauges from the stored counts (once, at start, before requests are
    /// served); until then (or when the count failed) the gauges have no series rather than wrong ones.
    public func start(from tally: ProjectionTally) {
        for state in ["new", "active", "inactive"] { customers.set([state], Double(tally.customers[state] ?? 0)) }
        for (status, count) in tally.subscriptions { subscriptions.set([status], Double(count)) }
        projectionsCounted.store(true, ordering: .releasing)
    }
}

/// Times each verification into ``ServerMetrics``.
struct TimedVerifier: NotificationVerifying {
    let base: any NotificationVerifying
    let metrics: ServerMetrics

    private func timed<T>(_ kind: String, _ body: () async throws(VerificationError) -> T) async throws(VerificationError) -> T {
        let started = ContinuousClock.now
        defer { metrics.verificationDuration.observe([kind], (ContinuousClock.now - started).seconds) }
        return try await body()
    }

    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification {
        try await timed("notification") { () async throws(VerificationError) in
            try await base.verifyNotification(signedPayload: signedPayload, app: app)
        }
    }

    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> (payload: JWSTransactionDecodedPayload, unknownMembers: [UnknownMember])
    {
        try await timed("transaction") { () async throws(VerificationError) in
            try await base.verifyTransaction(signedTransaction: signedTransaction, app: app)
        }
    }

    func verifyReceipt(_ receipt: ReceiptVerifier.Decoded, app: App, now: Int64) throws(VerificationError) -> AppReceipt {
        let started = ContinuousClock.now
        defer { metrics.verificationDuration.observe(["receipt"], (ContinuousClock.now - started).seconds) }
        return try base.verifyReceipt(receipt, app: app, now: now)
    }

    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError) -> AppTransaction {
        try await timed("appTransaction") { () async throws(VerificationError) in
            try await base.verifyAppTransaction(signedAppTransaction: signedAppTransaction, app: app)
        }
    }

    func verifyRealtimeRequest(signedPayload: String, app: App) async throws(VerificationError) -> DecodedRealtimeRequestBody {
        try await timed("retention") { () async throws(VerificationError) in
            try await base.verifyRealtimeRequest(signedPayload: signedPayload, app: app)
        }
    }
}

extension Duration {
    /// In seconds, as a Double.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension ServerMetrics {
    /// The registry rendered as an HTTP answer.
    func response() -> Response {
        var response = Response(status: 200, body: Array(registry.render().utf8))
        response.headers.set("Content-Type", MetricsRegistry.contentType)
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
