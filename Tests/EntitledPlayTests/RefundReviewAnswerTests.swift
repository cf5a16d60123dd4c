import EntitledConfig
@testable import EntitledTestSupport
import Foundation
import GooglePlay
import HTTPServer
import Storage
import Testing

@testable import EntitledServer

/// The backend answers Google Play's refund reviews through the server
/// (`GET /v1/google/refund-reviews`, `POST /v1/google/refund-reviews/{orderId}`), against the fake
/// Google on SQLite and PostgreSQL: the answer is recorded, sent once by a durable job, a second
/// answer is refused, and the server's own answer never follows the backend's.
@Suite(.serialized) struct RefundReviewAnswerTests {
    typealias Reviews = GooglePlayRefundReviewTests
    typealias Served = PlayAcknowledgementTests.Served

    static func list(_ served: Served, _ query: String = "", key: String = APIHarness.writer) async throws -> Loopback.Reply {
        try await Loopback.send(port: served.server.port, "GET", "/v1/google/refund-reviews" + query, headers: ["Authorization": key])
    }

    static func answer(_ served: Served, orderId: String, _ body: String, key: String = APIHarness.writer) async throws -> Loopback.Reply {
        try await Loopback.send(
            port: served.server.port, "POST", "/v1/google/refund-reviews/\(orderId)",
            headers: ["Authorization": key, "Content-Type": "application/json"], body: Array(body.utf8))
    }

    static func body(_ reviewToken: String, preference: String = "DECLINE", consumption: Int? = 40_000) -> String {
        let share = consumption.map { #","consumptionPercentageMilliunits":\#($0)"# } ?? ""
        return #"{"pendingRefundToken":"\#(reviewToken)","sampleContentProvided":true,"refundPreference":"\#(preference)"\#(share)}"#
    }

    @Test("the backend lists the open review, answers it once through the server, and Google gets that answer once", arguments: StoredBackend.all)
    func backendAnswersOnce(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Reviews.served(world, backend, settings: RefundReviewSettings())
        defer { Task { await served.close(); await world.close() } }
        let (token, reviewToken, review) = try await Reviews.pendingReview(world, served, reason: 2)
        let requestedAt = world.clock.nowMilliseconds()
        #expect(try await Reviews.push(world, served, review, messageId: "r-1") == 200)
        let orderId = try #require(world.google.subscription(token)?.latestOrderId)

        let open = try await Self.list(served, "?status=pending")
        #expect(open.status == 200, "\(open.text)")
        let listed = try #require((open.json["reviews"] as? [[String: Any]])?.first)
        #expect((open.json["reviews"] as? [[String: Any]])?.count == 1)
        #expect(listed["orderId"] as? String == orderId && listed["pendingRefundToken"] as? String == reviewToken)
        #expect(listed["packageName"] as? String == PlayWorld.packageName && listed["refundReason"] as? Int == 2)
        #expect(listed["status"] as? String == "pending")
        #expect(listed["respondBy"] as? String == ISO8601.format(milliseconds: requestedAt + 24 * 3_600_000))
        #expect(try await Self.list(served, key: APIHarness.reader).status == 403, "write scope")

        world.clock.advance(by: 60_000)
        let accepted = try await Self.answer(served, orderId: orderId, Self.body(reviewToken))
        #expect(accepted.status == 202, "\(accepted.text)")
        #expect(accepted.json["status"] as? String == "answered")
        #expect((accepted.json["answeredBy"] as? String)?.hasPrefix("api:") == true)
        // One answer per review: the same again, or another, is refused and changes nothing.
        let again = try await Self.answer(served, orderId: orderId, Self.body(reviewToken, preference: "APPROVE"))
        #expect(again.status == 409 && again.code == "REFUND_REVIEW_ANSWERED", "\(again.text)")
        #expect((try await Self.list(served).json["reviews"] as? [[String: Any]])?.isEmpty == true)

        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        let calls = world.google.reviewRefundCalls
        #expect(calls.count == 1)
        #expect(calls.first?.orderId == orderId)
        #expect(calls.first?.body == ReviewRefundRequest(
            pendingRefundToken: reviewToken, sampleContentProvided: true, refundPreference: "DECLINE", consumptionPercentageMilliunits: 40_000))

        // The audit: who answered what, when, and when Google took it.
        let answered = try #require((try await Self.list(served, "?status=answered").json["reviews"] as? [[String: Any]])?.first)
        #expect(answered["answeredBy"] as? String == accepted.json["answeredBy"] as? String)
        #expect((answered["answer"] as? [String: Any])?["refundPreference"] as? String == "DECLINE")
        #expect(answered["answeredAt"] as? String == ISO8601.format(milliseconds: requestedAt + 60_000))
        #expect(answered["forwardedAt"] is String)
    }

    @Test("the server's own job never answers a review the backend answered", arguments: StoredBackend.all)
    func autoRespondStepsAside(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Reviews.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let (token, reviewToken, review) = try await Reviews.pendingReview(world, served)
        #expect(try await Reviews.push(world, served, review, messageId: "r-1") == 200)
        let orderId = try #require(world.google.subscription(token)?.latestOrderId)
        #expect(try await Self.answer(served, orderId: orderId, Self.body(reviewToken, preference: "APPROVE", consumption: nil)).status == 202)
        // Both jobs run: only the backend's answer reaches Google.
        let report = try await served.jobs.runDue()
        #expect(report.done == 2 && report.failed == 0 && report.retried == 0, "\(report)")
        #expect(world.google.reviewRefundCalls.map(\.body.refundPreference) == ["APPROVE"])

        // And once the server answered, the backend is refused.
        let (otherToken, otherReviewToken, otherReview) = try await Reviews.pendingReview(world, served)
        #expect(try await Reviews.push(world, served, otherReview, messageId: "r-2") == 200)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        let otherOrder = try #require(world.google.subscription(otherToken)?.latestOrderId)
        let late = try await Self.answer(served, orderId: otherOrder, Self.body(otherReviewToken))
        #expect(late.status == 409 && late.code == "REFUND_REVIEW_ANSWERED" && late.text.contains("the server answered"), "\(late.text)")
        #expect(world.google.reviewRefundCalls.count == 2)
    }

    @Test("unknown orders, a review past its deadline and bodies Google refuses are typed problems", arguments: StoredBackend.all)
    func refusals(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Reviews.served(world, backend, settings: RefundReviewSettings())
        defer { Task { await served.close(); await world.close() } }
        let (token, reviewToken, review) = try await Reviews.pendingReview(world, served)
        #expect(try await Reviews.push(world, served, review, messageId: "r-1") == 200)
        let orderId = try #require(world.google.subscription(token)?.latestOrderId)

        let unknown = try await Self.answer(served, orderId: "GPA.0000-0000-0000-00000", Self.body(reviewToken))
        #expect(unknown.status == 404 && unknown.code == "REFUND_REVIEW_NOT_FOUND", "\(unknown.text)")
        let wrongToken = try await Self.answer(served, orderId: orderId, Self.body("not-the-token"))
        #expect(wrongToken.status == 404 && wrongToken.code == "REFUND_REVIEW_NOT_FOUND", "\(wrongToken.text)")
        for bad in [
            #"{"pendingRefundToken":"\#(reviewToken)","refundPreference":"DECLINE"}"#,  // sampleContentProvided missing
            Self.body(reviewToken, preference: "MAYBE"), Self.body(reviewToken, consumption: 100_001), "[]", "",
        ] {
            let refused = try await Self.answer(served, orderId: orderId, bad)
            #expect(refused.status == 400 && refused.code == "INVALID_REQUEST", "\(bad): \(refused.text)")
        }
        #expect(try await Self.answer(served, orderId: orderId, Self.body(reviewToken), key: APIHarness.reader).status == 403)

        world.clock.advance(by: 24 * 3_600_000)
        let late = try await Self.answer(served, orderId: orderId, Self.body(reviewToken))
        #expect(late.status == 409 && late.code == "REFUND_REVIEW_PAST_DEADLINE", "\(late.text)")
        #expect((try await Self.list(served).json["reviews"] as? [[String: Any]])?.isEmpty == true, "no longer open")
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        #expect(world.google.reviewRefundCalls.isEmpty)
    }
}
