import AppStore
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import HTTPClient
@testable import EntitledServer
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPServer
import Storage
import Testing

/// Google Play's pending refund reviews against the fake Google, on SQLite and PostgreSQL: with
/// `refundReviews.autoRespond` the server answers each review once, from the ledger, however often
/// the push comes and however many job runners race; without it the backend gets an event.
@Suite(.serialized) struct GooglePlayRefundReviewTests {
    typealias Served = PlayAcknowledgementTests.Served

    /// A server that answers reviews itself (`settings`), acknowledging nothing so the job runs are
    /// the reviews' alone.
    static func served(
        _ world: PlayWorld, _ backend: StoredBackend,
        settings: RefundReviewSettings = RefundReviewSettings(autoRespond: true, sampleContentProvided: true)
    ) async throws -> Served {
        try await Served(world, backend) {
            $0.playApps[0].googlePlay.acknowledge = false
            $0.playApps[0].googlePlay.refundReviews = settings
            $0.events.settleSeconds = 0
        }
    }

    static func pusher(_ world: PlayWorld, _ served: Served, google: FakeGoogle? = nil) -> FakePubSubPusher {
        FakePubSubPusher(
            google: google ?? world.google, endpoint: URL(string: "http://127.0.0.1:\(served.server.port)/v1/google/notifications")!,
            identity: .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount), transport: CurlHTTP())
    }

    static func push(_ world: PlayWorld, _ served: Served, _ notification: DeveloperNotification, messageId: String) async throws -> Int {
        try await CurlHTTP().send(try pusher(world, served).request(for: notification, messageId: messageId)).status
    }

    static func refundReviewJobs(_ served: Served) async throws -> [DurableJob] {
        try await served.store.jobs(status: nil, limit: 100).filter { $0.kind == PlayRefundReview.jobKind }
    }

    static func events(_ served: Served) async throws -> [[String: Any]] {
        let reply = try await Loopback.send(port: served.server.port, "GET", "/v1/events", headers: ["Authorization": APIHarness.reader], body: [])
        return reply.json["events"] as? [[String: Any]] ?? []
    }

    /// Posts a new `premium` subscription, lets `after` pass and has Google ask for a review of
    /// its order: the purchase token, the review's token and its notification.
    static func pendingReview(
        _ world: PlayWorld, _ served: Served, after: Int64 = 0, reason: Int = 1
    ) async throws -> (token: String, reviewToken: String, review: DeveloperNotification) {
        let token = try await served.postNewSubscription(world)
        _ = world.google.takeNotifications()
        world.clock.advance(by: after)
        let reviewToken = try world.google.requestRefundReview(token, reason: reason)
        return (token, reviewToken, try #require(world.google.takeNotifications().first))
    }

    /// Two pushes of one review (Pub/Sub redelivering, and publishing it again under a new id),
    /// then two job runners at once: one call at Google, its body what the ledger says.
    @Test(arguments: StoredBackend.all)
    func aReviewIsAnsweredOnceFromTheLedger(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Self.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        // Two thirds of the 30-day period used.
        let (token, reviewToken, review) = try await Self.pendingReview(world, served, after: 20 * 86_400_000, reason: 3)
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)
        #expect(try await Self.push(world, served, review, messageId: "r-2") == 200)
        #expect(try await Self.refundReviewJobs(served).count == 1)

        let other = try await buildApplication(
            configuration: served.assembled.configuration, clock: world.clock, store: served.store, apiSleeper: NoWait())
        let second = try #require(other.application.jobRunner)
        async let first = served.jobs.runDue()
        async let racing = second.runDue()
        let reports = try await [first, racing]
        #expect(reports.map(\.done).reduce(0, +) == 1, "\(reports)")
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())

        let calls = world.google.reviewRefundCalls
        #expect(calls.count == 1)
        let body = try #require(calls.first?.body)
        #expect(calls.first?.orderId == world.google.subscription(token)?.latestOrderId)
        #expect(body.pendingRefundToken == reviewToken)
        #expect(body.sampleContentProvided)
        #expect(body.consumptionPercentageMilliunits == 66_666)
        #expect(body.refundPreference == "DECLINE", "two thirds consumed")
        #expect(world.google.refundReviewAnswer(reviewToken) == body)
        // The server answered: the backend is not asked.
        #expect(try await Self.events(served).allSatisfy { $0["type"] as? String != "refund_review.requested" })
    }

    /// Without `autoRespond` the order's customer gets one `refund_review.requested` event with
    /// what the backend needs to answer, and Google hears nothing from the server.
    @Test(arguments: StoredBackend.all)
    func withoutAutoRespondTheBackendIsTold(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Self.served(world, backend, settings: RefundReviewSettings())
        defer { Task { await served.close(); await world.close() } }
        let token = try world.google.buyProduct(packageName: PlayWorld.packageName, productId: "lifetime")
        #expect(try await served.post("lifetime", token).status == 200)
        _ = world.google.takeNotifications()
        world.clock.advance(by: 3_600_000)
        let requestedAt = world.clock.nowMilliseconds()
        let reviewToken = try world.google.requestRefundReview(token, reason: 2)
        let review = try #require(world.google.takeNotifications().first)
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)

        let events = try await Self.events(served).filter { $0["type"] as? String == "refund_review.requested" }
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event["appUserId"] as? String == "alice")
        #expect(event["originalTransactionId"] as? String == token)
        let data = try #require(event["data"] as? [String: Any])
        #expect(data["orderId"] as? String == world.google.productPurchase(token)?.orderId)
        #expect(data["pendingRefundToken"] as? String == reviewToken)
        #expect(data["respondBy"] as? String == String(requestedAt + 24 * 3_600_000))
        #expect(data["refundReason"] as? String == "2")
        #expect(data["store"] as? String == "playStore")

        #expect(try await Self.refundReviewJobs(served).isEmpty)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        #expect(world.google.reviewRefundCalls.isEmpty)
    }

    /// A review pushed with a forged token is refused: no job, no event, no call.
    @Test(arguments: StoredBackend.all)
    func aForgedReviewChangesNothing(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Self.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let review = try await Self.pendingReview(world, served).review
        let forger = try FakeGoogle(products: [], clock: world.clock, signingKeyId: world.google.signingKeyId)
        let forged = try await CurlHTTP().send(try Self.pusher(world, served, google: forger).request(for: review, messageId: "f-1"))
        #expect(forged.status == 401)
        #expect(try await Self.refundReviewJobs(served).isEmpty)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        #expect(world.google.reviewRefundCalls.isEmpty)
        #expect(try await Self.events(served).allSatisfy { $0["type"] as? String != "refund_review.requested" })
    }

    /// Google failing past the client's own retries fails the run; the job answers after its
    /// backoff, still once. A review near its deadline unanswered is counted until then.
    @Test(arguments: StoredBackend.all)
    func aFailingGoogleIsRetried(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Self.served(world, backend, settings: RefundReviewSettings(autoRespond: true, refundPreference: .neutral))
        defer { Task { await served.close(); await world.close() } }
        let review = try await Self.pendingReview(world, served).review
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)

        world.google.failNextCalls(status: 503, count: 5)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(retried: 1))
        #expect(world.google.reviewRefundCalls.isEmpty)
        world.clock.advance(by: 19 * 3_600_000)
        #expect(try await PlayRefundReviewer.unansweredNearDeadline(served.store, now: world.clock.nowMilliseconds()) == 1)
        let health = try await Loopback.send(port: served.server.port, "GET", "/v1/console/health", headers: ["Authorization": APIHarness.admin])
        #expect(health.json["playRefundReviewsNearDeadline"] as? Int == 1, "\(health.text)")

        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        #expect(world.google.reviewRefundCalls.count == 1)
        #expect(world.google.reviewRefundCalls.first?.body.refundPreference == "NEUTRAL")
        #expect(world.google.reviewRefundCalls.first?.body.sampleContentProvided == false)
        #expect(try await PlayRefundReviewer.unansweredNearDeadline(served.store, now: world.clock.nowMilliseconds()) == 0)
    }

    /// Past Google's 24 hours the job gives up rather than send an answer Google no longer takes.
    @Test func aReviewPastItsDeadlineIsNotAnswered() async throws {
        let world = try PlayWorld()
        let served = try await Self.served(world, .sqlite)
        defer { Task { await served.close(); await world.close() } }
        let review = try await Self.pendingReview(world, served).review
        #expect(try await Self.push(world, served, review, messageId: "r-1") == 200)
        world.clock.advance(by: 25 * 3_600_000)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(failed: 1))
        #expect(world.google.reviewRefundCalls.isEmpty)
    }
}
