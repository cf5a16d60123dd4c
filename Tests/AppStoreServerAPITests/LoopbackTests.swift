import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledCrypto
import Foundation
import HTTPClient
import HTTPServer
import Testing

/// The simulator's fake Server API on a loopback port, and a client of it over ``CurlHTTP``.
struct FakeAppleOnLoopback {
    let simulator: Simulator
    let server: HTTPServer
    let key: P256PrivateKey
    let verifier: SignedDataVerifier
    let baseURL: URL

    init(environment: AppStoreEnvironment = .sandbox, receiver: InMemoryReceiver = InMemoryReceiver()) throws {
        let ca = try SimulatorCA.ephemeral()
        let clock = VirtualClock(milliseconds: start)
        simulator = Simulator(
            catalog: Catalog(
                bundleId: bundleId, appAppleId: 1_234_567_890,
                products: [
                    SimulatedProduct(id: "pro.monthly", kind: .autoRenewable, group: "pro", level: 1, period: ISODuration("P1M")!, price: 9990),
                    SimulatedProduct(id: "coins", kind: .consumable, price: 990),
                ]),
            environment: environment, ca: ca, clock: clock, transport: receiver)
        key = try P256PrivateKey()
        var router = Router()
        FakeServerAPI.register(simulator, keys: [APIKey(keyId: "ABC123DEFG", issuerId: issuerId, publicKey: try key.publicKey)], on: &router)
        server = try HTTPServer.quietLoopback(router, threads: 1)
        baseURL = URL(string: "http://127.0.0.1:\(server.port)")!
        verifier = try SignedDataVerifier(
            configuration: .init(
                trustedRoots: [ca.rootDER], bundleId: bundleId, appAppleId: 1_234_567_890, environments: [environment], mode: .offline),
            clock: clock)
    }

    func client(key: P256PrivateKey? = nil, sleeper: any Sleeper = RecordingSleeper()) -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            credentials: ServerAPICredentials(bundleId: bundleId, keyId: "ABC123DEFG", issuerId: issuerId, privateKey: key ?? self.key),
            settings: .init(environment: verifier.configuration.environments.first!, baseURL: baseURL, timeoutSeconds: 10),
            verifier: verifier, transport: CurlHTTP(), clock: simulator.clock, sleeper: sleeper)
    }

    func act(_ action: String, customer: String, product: String? = nil) async throws {
        var request = ActionRequest(action)
        request.customer = customer
        request.product = product
        _ = try await simulator.perform(request)
    }
}

@Suite(.serialized) struct LoopbackClientTests {
    @Test func wrongKeyIsRefusedWith401NamingTheApp() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        let error = await apiError { _ = try await apple.client(key: try P256PrivateKey()).requestTestNotification() }
        #expect(error == .unauthorized(bundleId: bundleId, keyId: "ABC123DEFG"))
        #expect(error?.description.contains(bundleId) == true)
    }

    @Test func notificationHistoryIsPagedAndIncludesFailedDeliveries() async throws {
        // Every delivery fails: the history still holds each notification (Sandbox tries once).
        let apple = try FakeAppleOnLoopback(receiver: InMemoryReceiver(failFirst: 1000))
        defer { Task { await apple.server.shutdown() } }
        for index in 0..<23 {
            try await apple.act("customer", customer: "c\(index)")
            try await apple.act("purchase", customer: "c\(index)", product: "coins")
        }
        let client = apple.client()
        let request = NotificationHistoryRequest(startDate: start - 1000, endDate: apple.simulator.now + 1000)
        var page = try await client.notificationHistory(request)
        var all = page.notifications
        var pages = 1
        while page.hasMore, let token = page.paginationToken {
            page = try await client.notificationHistory(request, paginationToken: token)
            all += page.notifications
            pages += 1
        }
        let sent = await apple.simulator.sender.history()
        #expect(pages == 2)
        #expect(all.count == sent.count && sent.count >= 23)
        #expect(all.map(\.notification.jws) == sent.map(\.signedPayload))
        #expect(all.allSatisfy { $0.sendAttempts.allSatisfy { $0.sendAttemptResult != .success } })
    }

    @Test func transactionHistoryFollowsRevisions() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        try await apple.act("customer", customer: "alice")
        try await apple.act("purchase", customer: "alice", product: "pro.monthly")
        _ = try await apple.simulator.advance(by: ISODuration("P2Y")!)  // 24 renewals
        let first = try #require(await apple.simulator.store.transactionOrder.first)
        let client = apple.client()
        let all = try await client.transactionHistoryAllPages(first)
        #expect(all.count == 25)
        #expect(all.map(\.payload.transactionId) == (await apple.simulator.store.transactionOrder))
        let statuses = try await client.subscriptionStatuses(first)
        #expect(statuses.subscriptions.count == 1)
        #expect(statuses.subscriptions.first?.renewalInfo?.payload.originalTransactionId == first)
        #expect(try await client.appTransactionInfo(first).payload.bundleId == bundleId)
    }

    @Test func rateLimitIsRetriedAfterRetryAfter() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        await apple.simulator.throttleServerAPI(requests: 2, retryAfterSeconds: 3)
        let sleeper = RecordingSleeper()
        let client = apple.client(sleeper: sleeper)
        let token = try await client.requestTestNotification()
        #expect(sleeper.recorded == [3000, 3000])
        #expect(await apple.simulator.serverAPIRequests == 3)
        let status = try await client.testNotificationStatus(token)
        #expect(status.notification.payload.notificationType == .test)
    }

    @Test func consumptionV2IsAccepted() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        try await apple.act("customer", customer: "bob")
        try await apple.act("purchase", customer: "bob", product: "coins")
        let id = try #require(await apple.simulator.store.transactionOrder.first)
        try await apple.client().sendConsumptionInformation(
            transactionId: id,
            ConsumptionRequestV2(customerConsented: true, deliveryStatus: .delivered, sampleContentProvided: false, consumptionPercentage: 100_000))
        #expect(await apple.simulator.consumptionInformation[id] != nil)
    }

    @Test func finishTransactionIsRecordedAndAnUnknownOneIsNotFound() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        try await apple.act("customer", customer: "carol")
        try await apple.act("purchase", customer: "carol", product: "coins")
        let id = try #require(await apple.simulator.store.transactionOrder.first)
        await apple.simulator.throttleServerAPI(requests: 1)
        let client = apple.client()
        try await client.finishTransaction(id)
        #expect(await apple.simulator.serverAPIRequests == 2, "the 429 was retried")
        #expect(await apple.simulator.finishedTransactions == [id])
        let error = await apiError { try await client.finishTransaction("999999") }
        #expect(error?.appleErrorCode == .transactionIdNotFound)
        #expect(await apple.simulator.finishedTransactions == [id])
    }
}
