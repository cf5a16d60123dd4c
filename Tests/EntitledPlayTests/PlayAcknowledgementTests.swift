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

/// `googlePlay.acknowledge`: a stored, unacknowledged Play purchase is acknowledged at the fake
/// Google by a durable job, retried while Google fails, and left alone when the app opts out;
/// on SQLite and PostgreSQL.
@Suite(.serialized) struct PlayAcknowledgementTests {
    /// A server of `world`'s configuration (changed by `adjust`) whose job runner the test drives.
    final class Served: @unchecked Sendable {
        let server: HTTPServer
        let store: any LedgerStore
        let jobs: JobRunner
        let assembled: AssembledServer

        init(_ world: PlayWorld, _ backend: StoredBackend, adjust: (inout Configuration) -> Void = { _ in }) async throws {
            var configuration = world.configuration
            adjust(&configuration)
            store = try await backend.open()
            assembled = try await buildApplication(configuration: configuration, clock: world.clock, store: store, apiSleeper: NoWait())
            jobs = try #require(assembled.application.jobRunner)
            var settings = HTTPServer.Configuration()
            settings.port = 0
            settings.accessLog = nil
            settings.errorLog = nil
            server = HTTPServer(configuration: settings, router: assembled.application.router)
            try server.start()
        }

        func post(_ productId: String, _ token: String) async throws -> Loopback.Reply {
            try await Loopback.send(
                port: server.port, "POST", "/v1/customers/alice/google/purchases", headers: ["Authorization": APIHarness.writer],
                body: Array(#"{"packageName":"\#(PlayWorld.packageName)","productId":"\#(productId)","purchaseToken":"\#(token)"}"#.utf8))
        }

        /// Buys a `premium` subscription at the fake Google and posts its token as the app would.
        func postNewSubscription(_ world: PlayWorld) async throws -> String {
            let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
            #expect(try await post("premium", token).status == 200)
            return token
        }

        func close() async {
            await server.shutdown()
            await store.close()
        }
    }

    static func report(done: Int = 0, retried: Int = 0, failed: Int = 0) -> JobRunReport {
        var report = JobRunReport()
        (report.done, report.retried, report.failed) = (done, retried, failed)
        return report
    }

    @Test(arguments: StoredBackend.all)
    func postedPurchasesEndAcknowledgedAtGoogle(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let subscription = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        let product = try world.google.buyProduct(packageName: PlayWorld.packageName, productId: "lifetime")
        #expect(try await served.post("premium", subscription).status == 200)
        #expect(try await served.post("lifetime", product).status == 200)
        // Posted again (the app retries): still one job per purchase.
        #expect(try await served.post("premium", subscription).status == 200)
        #expect(world.google.subscription(subscription)?.acknowledgementState == .pending)

        #expect(try await served.jobs.runDue() == Self.report(done: 2))
        #expect(world.google.subscription(subscription)?.acknowledgementState == .acknowledged)
        #expect(world.google.productPurchase(product)?.isAcknowledged == true)
        #expect(try await served.jobs.runDue() == Self.report())

        // Past Google's three days nothing is refunded.
        world.clock.advance(by: 4 * 86_400_000)
        world.google.sweep()
        #expect(world.google.subscription(subscription)?.subscriptionState == .active)
        #expect(world.google.productPurchase(product)?.purchaseState == 0)
    }

    /// A purchase the server first hears of by a Pub/Sub push is acknowledged too.
    @Test(arguments: StoredBackend.all)
    func pushedPurchasesEndAcknowledgedAtGoogle(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        let pusher = FakePubSubPusher(
            google: world.google, endpoint: URL(string: "http://127.0.0.1:\(served.server.port)/v1/google/notifications")!,
            identity: .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount), transport: CurlHTTP())
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await CurlHTTP().send(try pusher.request(for: notification, messageId: "m-\(index)")).status == 200)
        }
        #expect(try await served.jobs.runDue() == Self.report(done: 1))
        #expect(world.google.subscription(token)?.acknowledgementState == .acknowledged)
    }

    @Test(arguments: StoredBackend.all)
    func aFailingGoogleIsRetriedUntilItAcknowledges(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let token = try await served.postNewSubscription(world)

        // More 503s than the client's own retries: the job fails and waits for its backoff.
        world.google.failNextCalls(status: 503, count: 5)
        #expect(try await served.jobs.runDue() == Self.report(retried: 1))
        #expect(world.google.subscription(token)?.acknowledgementState == .pending)
        #expect(try await served.jobs.runDue() == Self.report(), "not due before its backoff")

        world.clock.advance(by: JobRunner.backoffMilliseconds(afterAttempt: 1))
        #expect(try await served.jobs.runDue() == Self.report(done: 1))
        #expect(world.google.subscription(token)?.acknowledgementState == .acknowledged)
    }

    @Test(arguments: StoredBackend.all)
    func anAlreadyAcknowledgedPurchaseIsASuccess(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let token = try await served.postNewSubscription(world)
        // The app acknowledged it itself in between.
        let account = try ServiceAccountKey(json: try world.fake.serviceAccountKeyFile(key: PlayWorld.serviceAccountKey))
        let app = DeveloperAPIClient(
            settings: .init(baseURL: world.fake.baseURL), tokens: AccessTokenProvider(account: account, transport: CurlHTTP(), clock: world.clock),
            transport: CurlHTTP())
        try await app.acknowledgeSubscription(
            packageName: PlayWorld.packageName, subscriptionId: "premium", purchaseToken: token)
        #expect(try await served.jobs.runDue() == Self.report(done: 1))
        #expect(world.google.subscription(token)?.acknowledgementState == .acknowledged)
    }

    @Test(arguments: StoredBackend.all)
    func acknowledgeFalseLeavesThePurchaseAlone(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend) { $0.playApps[0].googlePlay.acknowledge = false }
        defer { Task { await served.close(); await world.close() } }
        let token = try await served.postNewSubscription(world)
        #expect(try await served.jobs.runDue() == Self.report())
        #expect(world.google.subscription(token)?.acknowledgementState == .pending)
        #expect(try await served.store.jobs(status: nil, limit: 10).isEmpty)
    }

    /// The gauge counts a purchase whose acknowledgement has not succeeded once it is 48 hours old.
    @Test(arguments: StoredBackend.all)
    func purchasesNearTheDeadlineAreCounted(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let token = try await served.postNewSubscription(world)
        #expect(try await PlayAcknowledger.unacknowledgedNearDeadline(served.store, now: world.clock.nowMilliseconds()) == 0)
        world.clock.advance(by: 49 * 3_600_000)
        #expect(try await PlayAcknowledger.unacknowledgedNearDeadline(served.store, now: world.clock.nowMilliseconds()) == 1)
        // The console's health page shows the same count.
        let health = try await Loopback.send(port: served.server.port, "GET", "/v1/console/health", headers: ["Authorization": APIHarness.admin])
        #expect(health.json["playUnacknowledged"] as? Int == 1, "\(health.text)")
        #expect(try await served.jobs.runDue() == Self.report(done: 1))
        #expect(try await PlayAcknowledger.unacknowledgedNearDeadline(served.store, now: world.clock.nowMilliseconds()) == 0)
    }
}
