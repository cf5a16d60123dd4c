/// Google Play's pending refund reviews (table `play_refund_reviews`) and the one answer each
/// takes. Google records only the first `orders.reviewrefund` for a review, so the server records
/// an answer before it sends one, and sends only the recorded one: whichever answers first — the
/// server's own job (`googlePlay.refundReviews.autoRespond`) or the backend through the API — is
/// the answer, and the other is refused.
public protocol PlayRefundReviewStore: Sendable {
    /// Records a review Google asked for; a review recorded already (a repeated push) is kept as it is.
    func recordRefundReview(_ review: StoredRefundReview) async throws

    /// The reviews of `orderId` (of any app), oldest request first.
    func refundReviews(orderId: String) async throws -> [StoredRefundReview]

    /// Reviews requested at or after `since`, answered or not as `answered` says, oldest request
    /// first; at most `limit` (1…1000).
    func refundReviews(answered: Bool, since: Int64, limit: Int) async throws -> [StoredRefundReview]

    /// Records `answer` (the JSON body of `orders.reviewrefund`) as `review`'s by `answeredBy`
    /// unless an answer is recorded already; records the review first when it is not (asked before
    /// reviews were recorded). Returns the review as stored afterwards (its `answeredBy` says whose
    /// answer holds) and whether this call recorded it.
    func answerRefundReview(_ review: StoredRefundReview, answer: String, answeredBy: String, now: Int64) async throws
        -> (review: StoredRefundReview, recorded: Bool)

    /// Notes that Google took the recorded answer of the review.
    func refundReviewForwarded(packageName: String, pendingRefundToken: String, now: Int64) async throws
}

/// A pending refund review as recorded, with its answer once there is one.
public struct StoredRefundReview: Sendable, Hashable {
    public var packageName: String
    public var orderId: String
    public var pendingRefundToken: String
    /// Google's `refundReason`.
    public var refundReason: Int?
    /// When Google asked (its 24 hours run from then).
    public var requestedAt: Int64
    /// The JSON body of `orders.reviewrefund` recorded as the answer.
    public var answer: String?
    /// Who answered: ``automatic``, or `api:` and the API key's name.
    public var answeredBy: String?
    public var answeredAt: Int64?
    /// When Google took the answer.
    public var forwardedAt: Int64?

    /// ``answeredBy`` of the server's own answers, from the ledger.
    public static let automatic = "auto"

    public init(
        packageName: String, orderId: String, pendingRefundToken: String, refundReason: Int? = nil, requestedAt: Int64,
        answer: String? = nil, answeredBy: String? = nil, answeredAt: Int64? = nil, forwardedAt: Int64? = nil
    ) {
        self.packageName = packageName
        self.orderId = orderId
        self.pendingRefundToken = pendingRefundToken
        self.refundReason = refundReason
        self.requestedAt = requestedAt
        self.answer = answer
        self.answeredBy = answeredBy
        self.answeredAt = answeredAt
        self.forwardedAt = forwardedAt
    }
}

extension SessionBackedStore {
    private static var refundReviewColumns: SQLQuery {
        "package_name, order_id, pending_refund_token, refund_reason, requested_at, answer, answered_by, answered_at, forwarded_at"
    }

    func recordRefundReview(_ review: StoredRefundReview) async throws {
        try await write { session in try Self.insertRefundReview(session, review) }
    }

    private static func insertRefundReview(_ session: any SQLSession, _ review: StoredRefundReview) throws {
        let reason: Int64? = review.refundReason.map { Int64($0) }
        try session.query(
            """
            INSERT INTO play_refund_reviews (package_name, pending_refund_token, order_id, refund_reason, requested_at)
            VALUES (\(review.packageName), \(review.pendingRefundToken), \(review.orderId), \(reason), \(review.requestedAt))
            ON CONFLICT (package_name, pending_refund_token) DO NOTHING
            """)
    }

    func refundReviews(orderId: String) async throws -> [StoredRefundReview] {
        try await read { session in
            try session.rows(
                "SELECT \(Self.refundReviewColumns) FROM play_refund_reviews WHERE order_id = \(orderId) ORDER BY requested_at, pending_refund_token LIMIT 100",
                as: RefundReviewColumns.self
            ).map(\.review)
        }
    }

    func refundReviews(answered: Bool, since: Int64, limit: Int) async throws -> [StoredRefundReview] {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        return try await read { session in
            try session.rows(
                """
                SELECT \(Self.refundReviewColumns) FROM play_refund_reviews
                WHERE requested_at >= \(since) AND \(answered ? "answer IS NOT NULL" as SQLQuery : "answer IS NULL")
                ORDER BY requested_at, pending_refund_token LIMIT \(Int64(limit))
                """, as: RefundReviewColumns.self
            ).map(\.review)
        }
    }

    func answerRefundReview(_ review: StoredRefundReview, answer: String, answeredBy: String, now: Int64) async throws
        -> (review: StoredRefundReview, recorded: Bool) {
        try await write { session in
            try Self.insertRefundReview(session, review)
            let recorded = try session.query(
                """
                UPDATE play_refund_reviews SET answer = \(answer), answered_by = \(answeredBy), answered_at = \(now)
                WHERE package_name = \(review.packageName) AND pending_refund_token = \(review.pendingRefundToken) AND answer IS NULL
                RETURNING order_id
                """)
            guard
                let stored = try session.rows(
                    """
                    SELECT \(Self.refundReviewColumns) FROM play_refund_reviews
                    WHERE package_name = \(review.packageName) AND pending_refund_token = \(review.pendingRefundToken)
                    """, as: RefundReviewColumns.self
                ).first
            else { throw StorageError(.corrupt, "the refund review just written is missing") }
            return (stored.review, !recorded.isEmpty)
        }
    }

    func refundReviewForwarded(packageName: String, pendingRefundToken: String, now: Int64) async throws {
        _ = try await write { session in
            try session.query(
                """
                UPDATE play_refund_reviews SET forwarded_at = \(now)
                WHERE package_name = \(packageName) AND pending_refund_token = \(pendingRefundToken) AND forwarded_at IS NULL
                """)
        }
    }
}

private struct RefundReviewColumns: Decodable {
    var packageName: String, orderId: String, pendingRefundToken: String, refundReason: Int64?, requestedAt: Int64
    var answer: String?, answeredBy: String?, answeredAt: Int64?, forwardedAt: Int64?

    var review: StoredRefundReview {
        StoredRefundReview(
            packageName: packageName, orderId: orderId, pendingRefundToken: pendingRefundToken, refundReason: refundReason.map { Int($0) },
            requestedAt: requestedAt, answer: answer, answeredBy: answeredBy, answeredAt: answeredAt, forwardedAt: forwardedAt)
    }
}
