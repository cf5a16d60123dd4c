import AppStore
import GooglePlay
import Storage

/// The backend's answers to Google Play's pending refund reviews (for apps without
/// `googlePlay.refundReviews.autoRespond`, whose backend got a `refund_review.requested` event):
/// the open reviews with their deadlines, and an answer recorded once and forwarded to Google by a
/// durable job (``PlayRefundReviewer``). Google takes only the first answer, so the server takes
/// only the first too: a second answer, the backend's or the server's own, is refused.
struct RefundReviewAnswers: Sendable {
    let store: any LedgerStore
    /// The configured Play apps' package names.
    let packageNames: Set<String>

    /// Why an answer was refused.
    enum Failure: Error, Equatable {
        /// No review of this order (and token) was pushed to the server.
        case unknownReview(String)
        /// Google's 24 hours to answer are over (at `respondBy`, epoch ms).
        case pastDeadline(respondBy: Int64)
        /// The review has an answer already (`answeredBy`: the server's own, or an API key's).
        case answered(by: String)
        /// The body is not one Google takes.
        case invalidBody(String)
        /// The review's app is no longer configured.
        case appNotConfigured(String)
        case storageUnavailable
    }

    /// What ``list(answered:now:limit:)`` covers of answered reviews.
    static let answeredWindowMilliseconds: Int64 = 30 * 86_400_000

    /// Reviews still open (unanswered, within Google's 24 hours), or answered ones requested in the
    /// last 30 days; oldest request first.
    func list(answered: Bool, now: Int64, limit: Int) async throws(Failure) -> [StoredRefundReview] {
        let since = now - (answered ? Self.answeredWindowMilliseconds : PlayRefundReview.deadlineMilliseconds - 1)
        do {
            return try await store.refundReviews(answered: answered, since: since, limit: limit)
        } catch {
            throw .storageUnavailable
        }
    }

    /// Records `body` (the JSON of `orders.reviewrefund`) as the answer to the review of `orderId`
    /// whose `pendingRefundToken` it names, by the API key `actor`, and creates the job that sends
    /// it. Returns the review with its answer.
    func answer(orderId: String, body: [UInt8], actor: String, now: Int64) async throws(Failure) -> StoredRefundReview {
        let request: ReviewRefundRequest
        do {
            request = try PlayJSON.decode(ReviewRefundRequest.self, from: body, maxBytes: ReviewRefundRequest.maximumBytes, code: .invalidRequest)
        } catch {
            throw .invalidBody(error.message)
        }
        if let problem = request.problem { throw .invalidBody(problem) }
        let reviews: [StoredRefundReview]
        do {
            reviews = try await store.refundReviews(orderId: orderId)
        } catch {
            throw .storageUnavailable
        }
        guard let review = reviews.first(where: { $0.pendingRefundToken == request.pendingRefundToken }) else {
            throw .unknownReview(reviews.isEmpty ? "no refund review of order \(orderId) is known" : "order \(orderId) has no review with this pendingRefundToken")
        }
        guard packageNames.contains(review.packageName) else { throw .appNotConfigured(review.packageName) }
        let respondBy = review.requestedAt + PlayRefundReview.deadlineMilliseconds
        if review.answeredBy == nil, now >= respondBy { throw .pastDeadline(respondBy: respondBy) }
        do {
            let (stored, recorded) = try await store.answerRefundReview(
                review, answer: String(decoding: PlayJSON.encode(request), as: UTF8.self), answeredBy: Self.answeredBy(actor), now: now)
            let by = stored.answeredBy ?? StoredRefundReview.automatic
            // An answer through the API recorded earlier whose job was not stored (the reply was
            // an error) gets it now: the retry is refused, but the answer is not lost.
            if by.hasPrefix(Self.apiPrefix), stored.forwardedAt == nil { try await enqueueForwarding(stored, now: now) }
            guard recorded else { throw Failure.answered(by: by) }
            return stored
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .storageUnavailable
        }
    }

    /// Creates the job sending `review`'s recorded answer (once per review).
    private func enqueueForwarding(_ review: StoredRefundReview, now: Int64) async throws {
        let job = PlayRefundReview(
            packageName: review.packageName, orderId: review.orderId, pendingRefundToken: review.pendingRefundToken, requestedAt: review.requestedAt)
        _ = try await store.enqueueJob(
            kind: PlayRefundReview.answerJobKind, key: job.jobKey, bundleId: review.packageName, subject: job.subject,
            subjectTime: review.requestedAt, now: now, unlessFactsOf: nil)
    }

    /// `answeredBy` of an answer given through the API with the key `actor`.
    static func answeredBy(_ actor: String) -> String { apiPrefix + actor }
    static let apiPrefix = "api:"
}
