import Entitlements
import GooglePlay
import Storage

/// `googlePlay.acknowledge`: Google refunds a purchase not acknowledged within three days, so the
/// server acknowledges each Play purchase it stores unacknowledged, as a durable job (retried with
/// backoff, surviving restarts) keyed by the purchase token: created once however often the
/// purchase is announced again.
extension PlayIngest {
    /// Creates the acknowledgement job of each stored purchase that needs one. Called after the
    /// commit, so only a stored purchase is acknowledged; a crash in between is repaired by the
    /// sender's retry (Pub/Sub redelivers an unanswered push, the app posts again).
    func enqueueAcknowledgements(_ facts: [Fact], now: Int64) async throws(IngestError) {
        for fact in facts {
            guard let job = PlayAcknowledgement(fact), apps[job.packageName]?.app.googlePlay.acknowledge == true else { continue }
            try await enqueueFollowUp(
                kind: PlayAcknowledgement.jobKind, key: job.packageName + " " + job.purchaseToken, packageName: job.packageName,
                subject: job.subject, subjectTime: job.purchaseTime, now: now, what: "acknowledgement")
        }
    }
}

/// One purchase to acknowledge, as its job's subject carries it:
/// `subscription|product <purchase time ms> <productId> <purchaseToken>`.
struct PlayAcknowledgement: Sendable, Equatable {
    /// The job kind that acknowledges a Play purchase at Google.
    static let jobKind = "playAcknowledge"
    /// From when an unacknowledged purchase counts as close to Google's three-day refund.
    static let warningAgeMilliseconds: Int64 = 48 * 3_600_000
    /// When Google refunds it.
    static let deadlineMilliseconds: Int64 = 72 * 3_600_000

    var isSubscription: Bool
    var packageName: String
    var purchaseTime: Int64
    var productId: String
    var purchaseToken: String

    /// The acknowledgement `fact` calls for: a granted purchase Google reports unacknowledged
    /// (a pending one cannot be acknowledged yet; one that ended needs none).
    init?(_ fact: Fact) {
        switch fact {
        case .playSubscription(let s):
            let acknowledgeable: Set<PlaySubscriptionState> = [.active, .inGracePeriod, .onHold, .paused, .canceled]
            guard !s.acknowledged, acknowledgeable.contains(s.state), let start = s.startTime else { return nil }
            self.init(isSubscription: true, packageName: s.packageName, purchaseTime: start, productId: s.productId, purchaseToken: s.purchaseToken)
        case .playProduct(let p):
            guard !p.acknowledged, !p.consumed, p.purchaseState == 0 else { return nil }
            self.init(isSubscription: false, packageName: p.packageName, purchaseTime: p.purchaseTime, productId: p.productId, purchaseToken: p.purchaseToken)
        default:
            return nil
        }
    }

    init(isSubscription: Bool, packageName: String, purchaseTime: Int64, productId: String, purchaseToken: String) {
        self.isSubscription = isSubscription
        self.packageName = packageName
        self.purchaseTime = purchaseTime
        self.productId = productId
        self.purchaseToken = purchaseToken
    }

    /// The job's subject (product ids and purchase tokens hold no spaces).
    var subject: String { "\(isSubscription ? "subscription" : "product") \(purchaseTime) \(productId) \(purchaseToken)" }

    /// The purchase of an acknowledgement job; nil when the job is not one.
    init?(_ job: DurableJob) {
        let parts = job.subject.split(separator: " ", omittingEmptySubsequences: false)
        guard job.kind == Self.jobKind, parts.count == 4, parts[0] == "subscription" || parts[0] == "product",
            let time = Int64(parts[1]), !parts[2].isEmpty, !parts[3].isEmpty
        else { return nil }
        self.init(
            isSubscription: parts[0] == "subscription", packageName: job.bundleId, purchaseTime: time, productId: String(parts[2]),
            purchaseToken: String(parts[3]))
    }
}

/// Acknowledges a job's purchase at Google; Google's retryable answers retry the job. A purchase
/// Google already reports acknowledged (by the app, or by an earlier run whose answer was lost)
/// is a success.
struct PlayAcknowledger: Sendable {
    /// By package name.
    let apps: [String: PlayClients]

    init(clients: [PlayClients]) {
        apps = Dictionary(clients.map { ($0.app.packageName, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let purchase = PlayAcknowledgement(job) else { throw JobFailure(retryable: false, "unreadable acknowledgement job") }
        guard let api = apps[purchase.packageName]?.api else {
            throw JobFailure(retryable: false, "no Google Play app \(purchase.packageName) is configured")
        }
        do {
            if try await isAcknowledged(purchase, api) { return }
            if purchase.isSubscription {
                try await api.acknowledgeSubscription(
                    packageName: purchase.packageName, subscriptionId: purchase.productId, purchaseToken: purchase.purchaseToken)
            } else {
                try await api.acknowledgeProduct(
                    packageName: purchase.packageName, productId: purchase.productId, purchaseToken: purchase.purchaseToken)
            }
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.message)")
        }
    }

    /// Whether Google reports the purchase acknowledged already (or consumed, which acknowledges).
    private func isAcknowledged(_ purchase: PlayAcknowledgement, _ api: DeveloperAPIClient) async throws(GooglePlayError) -> Bool {
        if purchase.isSubscription {
            let state = try await api.subscriptionV2(packageName: purchase.packageName, purchaseToken: purchase.purchaseToken)
            return state.acknowledgementState == .acknowledged
        }
        let state = try await api.product(packageName: purchase.packageName, productId: purchase.productId, purchaseToken: purchase.purchaseToken)
        return state.isAcknowledged
    }

    /// Sets `entitled_play_unacknowledged_purchases` (``ServerMetrics/playUnacknowledged``) and
    /// `entitled_play_refund_reviews_near_deadline` (``ServerMetrics/playRefundReviewsNearDeadline``)
    /// from the jobs at a given time.
    func gaugeRefresher(store: any DurableJobStore, metrics: ServerMetrics) -> @Sendable (Int64) async throws -> Void {
        { now in
            let count = try await Self.unacknowledgedNearDeadline(store, now: now)
            metrics.playUnacknowledged.set([], Double(count))
            let reviews = try await PlayRefundReviewer.unansweredNearDeadline(store, now: now)
            metrics.playRefundReviewsNearDeadline.set([], Double(reviews))
        }
    }

    /// Acknowledgement jobs not done whose purchase is 48 to 72 hours old (Google refunds at 72).
    static func unacknowledgedNearDeadline(_ store: any DurableJobStore, now: Int64) async throws -> Int {
        try await store.unfinishedJobCount(
            kind: PlayAcknowledgement.jobKind, agedFrom: PlayAcknowledgement.warningAgeMilliseconds, under: PlayAcknowledgement.deadlineMilliseconds, now: now)
    }
}
