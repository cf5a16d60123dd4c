import Testing

@testable import Storage

/// Google Play's refund reviews as stored (SQLite and PostgreSQL): a repeated push keeps the first
/// record, and of answers given at once exactly one is recorded, whoever gives it.
@Suite struct RefundReviewStoreTests {
    static let review = StoredRefundReview(
        packageName: "com.example.app", orderId: "GPA.1", pendingRefundToken: "prt-1", refundReason: 2, requestedAt: testNow)

    @Test(arguments: Backend.all)
    func oneAnswerWinsWhateverRaces(_ backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            try await store.recordRefundReview(Self.review)
            var repeated = Self.review
            repeated.refundReason = 9
            try await store.recordRefundReview(repeated)
            #expect(try await store.refundReviews(orderId: "GPA.1") == [Self.review], "a repeated push keeps the first record")
            #expect(try await store.refundReviews(answered: false, since: testNow, limit: 10) == [Self.review])

            let results = try await withThrowingTaskGroup(of: (review: StoredRefundReview, recorded: Bool).self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await store.answerRefundReview(
                            Self.review, answer: #"{"n":\#(index)}"#, answeredBy: index == 0 ? StoredRefundReview.automatic : "api:key\(index)",
                            now: testNow + 1)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count(where: \.recorded) == 1)
            let winner = try #require(results.first(where: \.recorded)?.review)
            #expect(results.allSatisfy { $0.review == winner }, "every caller sees the one recorded answer")
            #expect(try await store.refundReviews(answered: true, since: testNow, limit: 10) == [winner])
            #expect(try await store.refundReviews(answered: false, since: testNow, limit: 10).isEmpty)

            try await store.refundReviewForwarded(packageName: "com.example.app", pendingRefundToken: "prt-1", now: testNow + 5)
            try await store.refundReviewForwarded(packageName: "com.example.app", pendingRefundToken: "prt-1", now: testNow + 9)
            #expect(try await store.refundReviews(orderId: "GPA.1").first?.forwardedAt == testNow + 5, "the first time Google took it")
        }
    }
}
