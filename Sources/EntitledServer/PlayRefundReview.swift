import AppStore
import Entitlements
import GooglePlay
import Storage

/// Google Play's pending refund reviews: Google asks the developer's view on a refund request and
/// records the first answer (`orders.reviewrefund`) given within 24 hours. The push is stored
/// (deduplicated on its `messageId`); with `googlePlay.refundReviews.autoRespond` a durable job
/// answers once from the ledger, else the order's customer gets a `refund_review.requested` event
/// and the backend answers itself.
extension PlayIngest {
    /// Stores a pending refund review and, with `autoRespond`, creates its answer job (after the
    /// commit, also for a duplicate push: a crash in between is repaired by Pub/Sub's retry).
    func refundReview(
        _ review: PendingRefundReviewNotification, clients: PlayClients, messageId: String, body: [UInt8], eventTime: Int64, now: Int64
    ) async throws(IngestError) -> IngestResult.Status {
        let packageName = clients.app.packageName
        let settings = clients.app.googlePlay.refundReviews
        let order: PlayOrder?
        do {
            order = try await ledger.store.playOrder(packageName: packageName, orderId: review.orderId)
        } catch {
            throw .storage(error as? StorageError ?? StorageError(.unavailable, "the order could not be read", detail: "\(error)"))
        }
        // The 24 hours run from Google's request, never from later than its arrival.
        let requestedAt = min(eventTime, now)
        var message = ReceivedMessage(
            notificationUUID: "google-play:" + messageId, source: .googlePlay, body: body, receivedAt: now,
            notificationType: PlayRefundReview.notificationType, bundleId: packageName)
        if !settings.autoRespond {
            if let order {
                message.event = MessageEvent(
                    type: EventType.refundReviewRequested.rawValue, originalTransactionIds: [order.purchaseToken],
                    details: PlayRefundReview.eventDetails(review, requestedAt: requestedAt))
            } else {
                ServerLog.event("refund review of an order the ledger does not hold", ["app": packageName, "orderId": review.orderId], level: .error)
            }
        }
        let status = try await ingest.commitRecordingUnknown(message, facts: [])
        let job = PlayRefundReview(packageName: packageName, orderId: review.orderId, pendingRefundToken: review.pendingRefundToken, requestedAt: requestedAt)
        do {
            // Listed for the backend (`GET /v1/google/refund-reviews`) and answered once, by whoever answers first.
            try await ledger.store.recordRefundReview(
                StoredRefundReview(
                    packageName: packageName, orderId: review.orderId, pendingRefundToken: review.pendingRefundToken,
                    refundReason: review.refundReason, requestedAt: requestedAt))
            if settings.autoRespond {
                _ = try await ingest.jobs.enqueueJob(
                    kind: PlayRefundReview.jobKind, key: job.jobKey, bundleId: packageName, subject: job.subject, subjectTime: requestedAt,
                    now: now, unlessFactsOf: nil)
            }
        } catch {
            throw .storage(StorageError(.unavailable, "the refund review could not be stored", detail: "\(error)"))
        }
        return status
    }
}

/// One pending refund review to answer, as its job's subject carries it: `<orderId> <pendingRefundToken>`
/// (neither holds spaces: ``DeveloperNotification/decode(_:)`` refuses those), dated by the job's
/// subject time, when Google asked.
struct PlayRefundReview: Sendable, Equatable {
    /// The job kind that answers a Play refund review from the ledger.
    static let jobKind = "playRefundReview"
    /// The job kind that sends the answer the backend gave through the API.
    static let answerJobKind = "playRefundReviewAnswer"
    /// The stored notification's type.
    static let notificationType = "pendingRefundReview"
    /// Google takes an answer within 24 hours of its request.
    static let deadlineMilliseconds: Int64 = 24 * 3_600_000
    /// From when an unanswered review counts as close to that deadline.
    static let warningAgeMilliseconds: Int64 = 18 * 3_600_000

    var packageName: String
    var orderId: String
    var pendingRefundToken: String
    var requestedAt: Int64

    var subject: String { orderId + " " + pendingRefundToken }
    /// The job's key: one job of each kind per review.
    var jobKey: String { packageName + " " + pendingRefundToken }

    init(packageName: String, orderId: String, pendingRefundToken: String, requestedAt: Int64) {
        self.packageName = packageName
        self.orderId = orderId
        self.pendingRefundToken = pendingRefundToken
        self.requestedAt = requestedAt
    }

    /// The review of a refund review job; nil when the job is not one.
    init?(_ job: DurableJob) {
        let parts = job.subject.split(separator: " ", omittingEmptySubsequences: false)
        guard job.kind == Self.jobKind || job.kind == Self.answerJobKind, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, let time = job.subjectTime else { return nil }
        self.init(packageName: job.bundleId, orderId: String(parts[0]), pendingRefundToken: String(parts[1]), requestedAt: time)
    }

    /// The `data` of a `refund_review.requested` event: what the backend needs to answer Google.
    static func eventDetails(_ review: PendingRefundReviewNotification, requestedAt: Int64) -> [String: String] {
        var details = [
            "store": PurchaseStore.playStore.rawValue, "orderId": review.orderId, "pendingRefundToken": review.pendingRefundToken,
            "respondBy": String(requestedAt + deadlineMilliseconds),
        ]
        if let reason = review.refundReason { details["refundReason"] = String(reason) }
        return details
    }
}

/// Answers a pending refund review at Google from what the ledger knows of the order's purchase
/// and its customer (``RefundReview/answer(orderId:purchaseToken:facts:preference:now:)``), once:
/// the job runner's lease keeps two processes from running it together, and a run whose success
/// was lost before it was recorded repeats a call Google ignores.
struct PlayRefundReviewer: Sendable {
    /// By package name.
    let apps: [String: PlayClients]
    let ledger: FactLedger
    let clock: any EpochClock

    init(clients: [PlayClients], ledger: FactLedger, clock: any EpochClock) {
        apps = Dictionary(clients.map { ($0.app.packageName, $0) }, uniquingKeysWith: { first, _ in first })
        self.ledger = ledger
        self.clock = clock
    }

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let review = PlayRefundReview(job) else { throw JobFailure(retryable: false, "unreadable refund review job") }
        guard let clients = apps[review.packageName] else {
            throw JobFailure(retryable: false, "no Google Play app \(review.packageName) is configured")
        }
        let fromBackend = job.kind == PlayRefundReview.answerJobKind
        // Turned off since the review came: the backend answers.
        guard fromBackend || clients.app.googlePlay.refundReviews.autoRespond else { return }
        guard clock.nowMilliseconds() < review.requestedAt + PlayRefundReview.deadlineMilliseconds else {
            throw JobFailure(retryable: false, "the review's 24 hours are over")
        }
        // The answer is recorded before it is sent, and each job sends only its author's: the
        // first recorded answer is the one Google gets, once.
        let stored = fromBackend ? try await recorded(review) : try await record(try await answer(review, clients: clients), for: review)
        let author = stored.answeredBy ?? ""
        guard fromBackend ? author.hasPrefix(RefundReviewAnswers.apiPrefix) : author == StoredRefundReview.automatic,
            stored.forwardedAt == nil, let text = stored.answer
        else { return }
        let body: ReviewRefundRequest
        do {
            body = try PlayJSON.decode(ReviewRefundRequest.self, from: Array(text.utf8), maxBytes: ReviewRefundRequest.maximumBytes, code: .invalidRequest)
        } catch {
            throw JobFailure(retryable: false, "the recorded answer does not decode: \(error.message)")
        }
        do {
            try await clients.api.reviewRefund(packageName: review.packageName, orderId: review.orderId, body)
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.message)")
        }
        do {
            try await ledger.store.refundReviewForwarded(packageName: review.packageName, pendingRefundToken: review.pendingRefundToken, now: clock.nowMilliseconds())
        } catch {
            // Sent: a repeat is a call Google ignores.
            throw JobFailure(retryable: true, "storage: \(error)")
        }
    }

    /// Records the server's answer unless one is recorded; the review as stored after.
    private func record(_ body: ReviewRefundRequest, for review: PlayRefundReview) async throws(JobFailure) -> StoredRefundReview {
        do {
            return try await ledger.store.answerRefundReview(
                StoredRefundReview(
                    packageName: review.packageName, orderId: review.orderId, pendingRefundToken: review.pendingRefundToken,
                    requestedAt: review.requestedAt),
                answer: String(decoding: PlayJSON.encode(body), as: UTF8.self), answeredBy: StoredRefundReview.automatic,
                now: clock.nowMilliseconds()
            ).review
        } catch {
            throw JobFailure(retryable: true, "storage: \(error)")
        }
    }

    /// The review with the answer the backend recorded.
    private func recorded(_ review: PlayRefundReview) async throws(JobFailure) -> StoredRefundReview {
        let stored: StoredRefundReview?
        do {
            stored = try await ledger.store.refundReviews(orderId: review.orderId).first {
                $0.packageName == review.packageName && $0.pendingRefundToken == review.pendingRefundToken
            }
        } catch {
            throw JobFailure(retryable: true, "storage: \(error)")
        }
        guard let stored else { throw JobFailure(retryable: false, "refund review \(review.orderId) is not recorded") }
        return stored
    }

    /// The body to send; a review of an order the ledger does not hold (yet) is retried.
    func answer(_ review: PlayRefundReview, clients: PlayClients) async throws(JobFailure) -> ReviewRefundRequest {
        let settings = clients.app.googlePlay.refundReviews
        do {
            guard let order = try await ledger.store.playOrder(packageName: review.packageName, orderId: review.orderId) else {
                throw JobFailure(retryable: true, "order \(review.orderId) is not in the ledger")
            }
            let owner = try await ledger.store.subscription(originalTransactionId: order.purchaseToken)
            var facts: [Fact] = []
            if let owner {
                facts = try await ledger.store.facts(appUserId: owner.appUserId, projector: ledger.projector).compactMap(\.fact)
            }
            let answer = RefundReview.answer(
                orderId: review.orderId, purchaseToken: order.purchaseToken, facts: facts, preference: settings.refundPreference,
                now: clock.nowMilliseconds())
            return ReviewRefundRequest(
                pendingRefundToken: review.pendingRefundToken, sampleContentProvided: settings.sampleContentProvided,
                refundPreference: answer.refundPreference.rawValue, consumptionPercentageMilliunits: answer.consumptionPercentageMilliunits)
        } catch let failure as JobFailure {
            throw failure
        } catch {
            throw JobFailure(retryable: true, "storage: \(error)")
        }
    }

    /// Refund review jobs not done whose review is 18 to 24 hours old (Google stops taking an answer at 24).
    static func unansweredNearDeadline(_ store: any DurableJobStore, now: Int64) async throws -> Int {
        try await store.unfinishedJobCount(
            kind: PlayRefundReview.jobKind, agedFrom: PlayRefundReview.warningAgeMilliseconds, under: PlayRefundReview.deadlineMilliseconds, now: now)
    }
}
