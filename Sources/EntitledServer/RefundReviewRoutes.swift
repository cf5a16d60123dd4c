import AppStore
import GooglePlay
import HTTPServer
import Storage

/// Google Play's pending refund reviews for the backend (API key, `write` scope): the open ones
/// with their deadlines, and the backend's answer, which the server records and sends to Google
/// once (logic in ``RefundReviewAnswers``).
struct RefundReviewRoutes: Sendable {
    let gate: AccessGate
    let answers: RefundReviewAnswers
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/google/refund-reviews") { try await routes.list($0) }
        router.post("/v1/google/refund-reviews/{orderId}") { try await routes.answer($0) }
    }

    /// `GET /v1/google/refund-reviews?status=pending|answered&limit=…`.
    func list(_ request: Request) async throws -> Response {
        _ = try gate.requireKey(request, scope: .write)
        let status = request.query["status"] ?? "pending"
        guard status == "pending" || status == "answered" else { throw HTTPError(.invalidRequest, "status must be pending or answered") }
        let (_, limit) = try API.historyPaging(request)
        let reviews: [StoredRefundReview]
        do throws(RefundReviewAnswers.Failure) {
            reviews = try await answers.list(answered: status == "answered", now: clock.nowMilliseconds(), limit: limit)
        } catch {
            throw Self.problem(error)
        }
        return try .json(RefundReviewsBody(reviews: reviews.map(RefundReviewBody.init)))
    }

    /// `POST /v1/google/refund-reviews/{orderId}` with `orders.reviewrefund`'s body: 202 once the
    /// answer is recorded and its sending is a durable job.
    func answer(_ request: Request) async throws -> Response {
        let actor = try gate.requireKey(request, scope: .write)
        let orderId = try request.parameter("orderId")
        guard !orderId.isEmpty, orderId.utf8.count <= 256 else { throw HTTPError(.invalidPathParameter, "orderId must be 1 to 256 bytes") }
        let review: StoredRefundReview
        do throws(RefundReviewAnswers.Failure) {
            review = try await answers.answer(orderId: orderId, body: request.body, actor: actor, now: clock.nowMilliseconds())
        } catch {
            throw Self.problem(error)
        }
        return try .json(RefundReviewBody(review), status: 202)
    }

    static func problem(_ failure: RefundReviewAnswers.Failure) -> HTTPError {
        switch failure {
        case .unknownReview(let detail): HTTPError(.refundReviewNotFound, detail)
        case .pastDeadline(let respondBy):
            HTTPError(.refundReviewPastDeadline, "Google took answers to this review until \(ISO8601.format(milliseconds: respondBy))")
        case .answered(let by):
            HTTPError(.refundReviewAnswered, by == StoredRefundReview.automatic ? "the server answered this review" : "this review was answered (\(by))")
        case .invalidBody(let detail): HTTPError(.invalidRequest, detail)
        case .appNotConfigured(let packageName): HTTPError(.appNotFound, "no Google Play app \(packageName) is configured")
        case .storageUnavailable: Problems.unavailable
        }
    }
}

/// `GET /v1/google/refund-reviews`' body.
struct RefundReviewsBody: Encodable {
    var reviews: [RefundReviewBody]
}

/// One review as the API shows it: Google's fields, its deadline, and its answer once there is one.
struct RefundReviewBody: Encodable {
    var review: StoredRefundReview

    init(_ review: StoredRefundReview) { self.review = review }

    enum Key: String, CodingKey {
        case packageName, orderId, pendingRefundToken, refundReason, requestedAt, respondBy, status, answer, answeredBy, answeredAt, forwardedAt
    }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(review.packageName, .packageName)
        try c.put(review.orderId, .orderId)
        try c.put(review.pendingRefundToken, .pendingRefundToken)
        try c.put(review.refundReason, .refundReason)
        try c.date(review.requestedAt, .requestedAt)
        try c.date(review.requestedAt + PlayRefundReview.deadlineMilliseconds, .respondBy)
        try c.put(review.answer == nil ? "pending" : "answered", .status)
        try c.put(
            review.answer.flatMap {
                try? PlayJSON.decode(ReviewRefundRequest.self, from: Array($0.utf8), maxBytes: ReviewRefundRequest.maximumBytes, code: .malformedResponse)
            }, .answer)
        try c.put(review.answeredBy, .answeredBy)
        try c.date(review.answeredAt, .answeredAt)
        try c.date(review.forwardedAt, .forwardedAt)
    }
}
