import GooglePlay
import HTTPServer

/// A refund review the fake asked (``FakeGoogle/requestRefundReview(_:orderId:reason:)``).
struct FakeRefundReview: Sendable, Hashable {
    var packageName: String
    var orderId: String
    /// The first answer, which Google keeps; later ones are ignored.
    var answer: ReviewRefundRequest?
}

/// One accepted `orders.reviewrefund` call as the fake received it.
public struct RecordedReviewRefund: Sendable, Hashable {
    public var packageName: String
    public var orderId: String
    public var body: ReviewRefundRequest
    /// Whether it was the review's first answer (the one Google records).
    public var recorded: Bool
}

/// Pending refund reviews: Google asks the developer about a refund request and keeps the first
/// answer to each review (later ones are answered 200 and ignored).
extension FakeGoogle {
    /// Asks the developer to review a refund request of `token`'s order (its latest one, or
    /// `orderId`): queues a `pendingRefundReviewNotification` and answers its pending refund token.
    @discardableResult
    public func requestRefundReview(_ token: String, orderId: String? = nil, reason: Int = 1) throws(FakeGoogleError) -> String {
        let now = nowMillis
        return try state.withLock { (state) throws(FakeGoogleError) -> String in
            let (packageName, latest, account): (String, String, String?)
            if let s = state.subscriptions[token] {
                (packageName, latest, account) = (s.packageName, s.purchase.latestOrderId ?? "", s.obfuscatedAccountId)
            } else if let p = state.productPurchases[token] {
                (packageName, latest, account) = (p.packageName, p.orderId, p.obfuscatedAccountId)
            } else {
                throw FakeGoogleError("no purchase \(token)")
            }
            let order = orderId ?? latest
            let reviewToken = nextToken(&state, "refund")
            state.refundReviews[reviewToken] = FakeRefundReview(packageName: packageName, orderId: order)
            state.outbox.append(
                DeveloperNotification(
                    packageName: packageName, eventTimeMillis: now,
                    pendingRefundReviewNotification: PendingRefundReviewNotification(
                        pendingRefundToken: reviewToken, orderId: order, refundReason: reason, obfuscatedAccountId: account)))
            return reviewToken
        }
    }

    /// Every accepted `orders.reviewrefund` call, oldest first.
    public var reviewRefundCalls: [RecordedReviewRefund] { state.withLock { $0.reviewRefundCalls } }

    /// The answer Google keeps for a review (its first), nil while unanswered.
    public func refundReviewAnswer(_ pendingRefundToken: String) -> ReviewRefundRequest? {
        state.withLock { $0.refundReviews[pendingRefundToken]?.answer }
    }

    /// `POST …/applications/{packageName}/orders/{orderId}:reviewrefund`: checks the body as
    /// Google documents it (required members, ranges, at most 1000 usage events) and that the token
    /// is a review of that order.
    func registerReviewRefund(on router: inout Router) {
        router.post("/androidpublisher/v3/applications/{packageName}/orders/{orderAction}") { [self] request in
            try api(request) { () throws(FakeGoogleError) in
                let (orderId, action) = Self.split(request.pathParameters["orderAction"])
                let packageName = request.pathParameters["packageName"] ?? ""
                guard action == "reviewrefund" else { throw .notFound }
                let body: ReviewRefundRequest
                do throws(GooglePlayError) {
                    body = try PlayJSON.decode(
                        ReviewRefundRequest.self, from: request.body, maxBytes: ReviewRefundRequest.maximumBytes, code: .invalidRequest)
                } catch {
                    throw FakeGoogleError(error.message)
                }
                if let problem = body.problem { throw FakeGoogleError(problem) }
                try state.withLock { (state) throws(FakeGoogleError) in
                    guard let review = state.refundReviews[body.pendingRefundToken], review.packageName == packageName,
                        review.orderId == orderId
                    else { throw FakeGoogleError("The pending refund token does not match the order.") }
                    let first = review.answer == nil
                    if first { state.refundReviews[body.pendingRefundToken]?.answer = body }
                    state.reviewRefundCalls.append(RecordedReviewRefund(packageName: packageName, orderId: orderId, body: body, recorded: first))
                }
                return []
            }
        }
    }
}
