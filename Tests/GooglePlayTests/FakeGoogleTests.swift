import AppStore
import EntitledCrypto
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import Testing

/// The Developer API client against the fake Google over loopback, and the fake's lifecycles.
@Suite(.serialized) struct FakeGoogleTests {
    static let package = "com.example.app"

    final class World: Sendable {
        let clock = TestClock()
        let google: FakeGoogle
        let server: FakeGoogleServer
        let sleeper = RecordingSleeper()
        let client: DeveloperAPIClient
        let tokens: AccessTokenProvider

        /// Prices the products (9.99 USD the subscriptions, 0.99 USD a coin) when `priced`.
        init(priced: Bool = false) throws {
            let monthly = priced ? Money(currencyCode: "USD", milliunits: 9_990) : nil
            google = try FakeGoogle(
                products: [
                    FakePlayProduct(
                        productId: "premium", kind: .subscription(basePlans: ["monthly", "yearly"], periodSeconds: 30 * 86_400), price: monthly),
                    FakePlayProduct(productId: "premium_plus", kind: .subscription(basePlans: ["monthly"], periodSeconds: 30 * 86_400)),
                    FakePlayProduct(
                        productId: "coins", kind: .oneTime(consumable: true), price: priced ? Money(currencyCode: "USD", milliunits: 990) : nil),
                ], clock: clock, signingKey: TestKeys.google)
            server = try FakeGoogleServer(google: google)
            let account = try ServiceAccountKey(json: try server.serviceAccountKeyFile())
            tokens = AccessTokenProvider(account: account, transport: CurlHTTP(), clock: clock)
            client = DeveloperAPIClient(
                settings: .init(baseURL: server.baseURL, timeoutSeconds: 10, retry: RetryPolicy(maxAttempts: 3)), tokens: tokens,
                transport: CurlHTTP(), sleeper: sleeper, random: { 0 })
        }
    }

    @Test func subscriptionLifecycleThroughTheAPI() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buySubscription(packageName: Self.package, productId: "premium", obfuscatedAccountId: "acct-1", test: true)
        var purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.subscriptionState == .active)
        #expect(purchase.acknowledgementState == .pending)
        #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "acct-1")
        #expect(purchase.lineItems.first?.offerDetails?.basePlanId == "monthly")
        #expect(purchase.isTestPurchase)
        let expiry = try #require(purchase.expiryTime)

        try await world.client.acknowledgeSubscription(packageName: Self.package, subscriptionId: "premium", purchaseToken: token)
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).acknowledgementState == .acknowledged)

        try world.google.renew(token)
        purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.expiryTime!.milliseconds == expiry.milliseconds + 30 * 86_400_000)

        try world.google.failRenewal(token)
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).subscriptionState == .inGracePeriod)
        try world.google.putOnHold(token)
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).subscriptionState == .onHold)
        try world.google.recover(token)
        try world.google.cancel(token)
        purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.subscriptionState == .canceled)
        #expect(purchase.lineItems.first?.autoRenewingPlan?.autoRenewEnabled == false)
        #expect(purchase.canceledStateContext?.userInitiatedCancellation != nil)

        let types = world.google.takeNotifications().compactMap { $0.subscriptionNotification?.notificationType }
        #expect(types == [.purchased, .renewed, .inGracePeriod, .onHold, .recovered, .canceled])

        // Past the expiry the sweep expires it.
        world.clock.advance(seconds: 31 * 86_400)
        world.google.sweep()
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).subscriptionState == .expired)
        #expect(world.google.takeNotifications().compactMap { $0.subscriptionNotification?.notificationType } == [.expired])
    }

    @Test func pauseResumesAndRevokeVoids() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        // Acknowledged, or the sweep ten days on would refund it.
        try await world.client.acknowledgeSubscription(packageName: Self.package, subscriptionId: "premium", purchaseToken: token)
        let resume = world.clock.nowMilliseconds() + 10 * 86_400_000
        try world.google.pause(token, resumeAtMillis: resume)
        var purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.subscriptionState == .paused)
        #expect(purchase.pausedStateContext?.autoResumeTime?.milliseconds == resume)
        world.clock.advance(seconds: 10 * 86_400)
        world.google.sweep()
        purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.subscriptionState == .active)
        #expect(purchase.expiryTime!.milliseconds > world.clock.nowMilliseconds())
        try world.google.revoke(token)
        purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        #expect(purchase.subscriptionState == .expired)
        let voided = try await world.client.allVoidedPurchases(packageName: Self.package)
        #expect(voided.map(\.purchaseToken) == [token])
        let notifications = world.google.takeNotifications()
        #expect(notifications.compactMap { $0.subscriptionNotification?.notificationType } == [.purchased, .paused, .renewed, .revoked])
        #expect(notifications.last?.voidedPurchaseNotification?.productType == .subscription)
        // Only live subscriptions move on.
        #expect(throws: FakeGoogleError.self) { try world.google.renew(token) }
        #expect(throws: FakeGoogleError.self) { try world.google.revoke(token) }
    }

    @Test func upgradeLinksTheNewTokenAndSupersedesTheOld() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let old = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let new = try world.google.upgrade(old, to: "premium_plus")
        let purchase = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: new)
        #expect(purchase.linkedPurchaseToken == old)
        #expect(purchase.lineItems.first?.productId == "premium_plus")
        let superseded = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: old)
        #expect(superseded.subscriptionState == .expired)
        #expect(superseded.canceledStateContext?.replacementCancellation != nil)
    }

    @Test func unacknowledgedPurchasesAreRefundedAfterThreeDays() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let kept = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let lost = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let coins = try world.google.buyProduct(packageName: Self.package, productId: "coins", quantity: 2)
        try await world.client.acknowledgeSubscription(packageName: Self.package, subscriptionId: "premium", purchaseToken: kept)
        world.clock.advance(seconds: 3 * 86_400 - 1)
        world.google.sweep()
        #expect(try await world.client.allVoidedPurchases(packageName: Self.package).isEmpty)
        world.clock.advance(seconds: 1)
        world.google.sweep()
        let voided = try await world.client.allVoidedPurchases(packageName: Self.package)
        #expect(Set(voided.map(\.purchaseToken)) == [lost, coins])
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: lost).subscriptionState == .expired)
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: kept).subscriptionState == .active)
        #expect(try await world.client.product(packageName: Self.package, productId: "coins", purchaseToken: coins).isCanceled)
        // Only one-time products when subscriptions are not asked for.
        #expect(try await world.client.allVoidedPurchases(packageName: Self.package, includeSubscriptions: false).map(\.purchaseToken) == [coins])
    }

    @Test func productsAcknowledgeConsumeAndRefund() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buyProduct(packageName: Self.package, productId: "coins", quantity: 3, obfuscatedAccountId: "acct-9")
        var product = try await world.client.product(packageName: Self.package, productId: "coins", purchaseToken: token)
        #expect(product.isPurchased && !product.isAcknowledged && !product.isConsumed && product.quantity == 3)
        #expect(product.obfuscatedExternalAccountId == "acct-9")
        try await world.client.acknowledgeProduct(packageName: Self.package, productId: "coins", purchaseToken: token)
        try await world.client.consumeProduct(packageName: Self.package, productId: "coins", purchaseToken: token)
        product = try await world.client.product(packageName: Self.package, productId: "coins", purchaseToken: token)
        #expect(product.isAcknowledged && product.isConsumed)
        let twice = await #expect(throws: GooglePlayError(.apiError, "")) {
            try await world.client.consumeProduct(packageName: Self.package, productId: "coins", purchaseToken: token)
        }
        #expect(twice?.status == 400)
        try world.google.refundProduct(token)
        #expect(try await world.client.product(packageName: Self.package, productId: "coins", purchaseToken: token).isCanceled)
        let kinds = world.google.takeNotifications().map { $0.kind }
        #expect(kinds.count == 2)
    }

    /// `orders.get`: what each order of a subscription and a one-time purchase charged.
    @Test func ordersAnswerWhatEachOrderCharged() async throws {
        let world = try World(priced: true)
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let first = try #require(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).latestOrderId)
        try world.google.renew(token)
        let second = try #require(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).latestOrderId)
        #expect(first != second)
        for id in [first, second] {
            let order = try await world.client.order(packageName: Self.package, orderId: id)
            #expect(order.orderId == id && order.purchaseToken == token && order.state == "PROCESSED")
            #expect(order.total?.milliunits == 9_990 && order.total?.currency == "USD")
            #expect(order.tax?.milliunits == 0)
            #expect(order.developerRevenueInBuyerCurrency?.milliunits == 8_491, "Google's 15 % on subscriptions")
            #expect(order.lineItems?.map(\.productId) == ["premium"])
        }
        let coins = try world.google.buyProduct(packageName: Self.package, productId: "coins", quantity: 3)
        let orderId = try #require(try await world.client.product(packageName: Self.package, productId: "coins", purchaseToken: coins).orderId)
        var order = try await world.client.order(packageName: Self.package, orderId: orderId)
        #expect(order.total?.milliunits == 2_970 && order.developerRevenueInBuyerCurrency?.milliunits == 2_079)
        #expect(order.lineItems?.first?.listingPrice?.milliunits == 990)
        try world.google.refundProduct(coins)
        order = try await world.client.order(packageName: Self.package, orderId: orderId)
        #expect(order.state == "REFUNDED")
        let missing = await #expect(throws: GooglePlayError(.apiError, "")) {
            try await world.client.order(packageName: "com.other.app", orderId: orderId)
        }
        #expect(missing?.isNotFound == true)
    }

    /// An `Order` as Google documents it decodes, unknown members ignored; a malformed amount is no price.
    @Test func orderDecodes() throws {
        let json = """
            {"orderId":"GPA.1","purchaseToken":"t","state":"PROCESSED","createTime":"2026-01-01T00:00:00Z",
             "total":{"currencyCode":"EUR","units":"4","nanos":990000000},"tax":{"currencyCode":"EUR","units":"0","nanos":800000000},
             "developerRevenueInBuyerCurrency":{"currencyCode":"EUR","units":"bad"},
             "lineItems":[{"productId":"premium","productTitle":"Premium","listingPrice":{"currencyCode":"EUR","units":"4","nanos":990000000},
               "total":{"currencyCode":"EUR","units":"4","nanos":990000000},"subscriptionDetails":{"offerPhase":"BASE"}}]}
            """
        let order = try PlayJSON.decode(Order.self, from: Array(json.utf8), maxBytes: Order.maximumBytes, code: .malformedResponse)
        #expect(order.total?.milliunits == 4_990 && order.tax?.milliunits == 800)
        #expect(order.developerRevenueInBuyerCurrency != nil && order.developerRevenueInBuyerCurrency?.milliunits == nil)
        #expect(order.lineItems?.first?.listingPrice?.currency == "EUR")
    }

    @Test func unknownTokensAreNotFoundAndNotRetried() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let error = await #expect(throws: GooglePlayError(.apiError, "")) {
            try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: "no-such-token")
        }
        #expect(error?.isNotFound == true)
        #expect(world.sleeper.waits.isEmpty)
        // Another app's token is not this app's.
        let token = try world.google.buySubscription(packageName: "com.other.app", productId: "premium")
        await #expect(throws: GooglePlayError(.apiError, "")) {
            try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        }
    }

    @Test func serverErrorsAndThrottlingAreRetried() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        world.google.failNextCalls(status: 503)
        world.google.failNextCalls(status: 429)
        #expect(try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token).subscriptionState == .active)
        // Backoff for the 503 (half of 500 ms with no jitter), then the 429's Retry-After.
        #expect(world.sleeper.waits == [250, 2000])
        world.google.failNextCalls(status: 503, count: 3)
        let error = await #expect(throws: GooglePlayError(.apiError, "")) {
            try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        }
        #expect(error?.status == 503)
    }

    @Test func voidedPurchasesArePaged() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        var tokens: [String] = []
        for _ in 0..<5 {
            let token = try world.google.buyProduct(packageName: Self.package, productId: "coins")
            try world.google.refundProduct(token)
            tokens.append(token)
        }
        let page = try await world.client.voidedPurchases(packageName: Self.package, maxResults: 2)
        #expect(page.voidedPurchases?.count == 2)
        #expect(page.tokenPagination?.nextPageToken != nil)
        let all = try await world.client.allVoidedPurchases(packageName: Self.package)
        #expect(all.map(\.purchaseToken) == tokens)
    }

    @Test func accessTokenIsReusedAcrossCalls() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let token = try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let first = try await world.tokens.accessToken()
        for _ in 0..<3 { _ = try await world.client.subscriptionV2(packageName: Self.package, purchaseToken: token) }
        #expect(try await world.tokens.accessToken() == first)
        // Google's 401 for an access token it no longer takes: the client fetches a fresh one once.
        let stale = ScriptedTransport { _ in OutboundResponse(status: 401, body: json(#"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#)) }
        let client = DeveloperAPIClient(
            settings: .init(baseURL: world.server.baseURL, retry: .none), tokens: world.tokens, transport: stale, sleeper: world.sleeper)
        let error = await #expect(throws: GooglePlayError(.apiError, "")) {
            try await client.subscriptionV2(packageName: Self.package, purchaseToken: token)
        }
        #expect(error?.status == 401)
        #expect(stale.requests.count == 2)
        #expect(try await world.tokens.accessToken() != first)
    }

    @Test func pushesVerifyWithTheFakesKeysAndForgeriesDoNot() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        let audience = "https://entitled.test/v1/google/notifications"
        let email = "push@fake-project.iam.gserviceaccount.com"
        let received = ScriptedTransport { _ in OutboundResponse(status: 200) }
        let pusher = FakePubSubPusher(
            google: world.google, endpoint: URL(string: audience)!, identity: .init(audience: audience, serviceAccountEmail: email),
            transport: received)
        try world.google.buySubscription(packageName: Self.package, productId: "premium")
        let deliveries = await pusher.deliverPending()
        #expect(deliveries.map(\.status) == [200])
        let request = try #require(received.requests.first)
        let verifier = PushVerifier(
            settings: .init(audience: audience, serviceAccountEmail: email),
            keys: GoogleKeySet(certsURL: world.server.certsURL, transport: CurlHTTP(), clock: world.clock), clock: world.clock)
        let push = try await verifier.verify(authorization: request.headers["Authorization"])
        #expect(push.email == email)
        let envelope = try PubSubPushEnvelope.decode(request.body ?? [])
        #expect(envelope.message.messageId == deliveries[0].messageId)
        let notification = try envelope.message.developerNotification()
        #expect(notification.subscriptionNotification?.notificationType == .purchased)

        // A push from another project's account, or for another audience, is refused.
        let impostor = FakePubSubPusher(
            google: world.google, endpoint: URL(string: audience)!,
            identity: .init(audience: audience, serviceAccountEmail: "attacker@evil.iam.gserviceaccount.com"), transport: received)
        await #expect(throws: GooglePlayError(.wrongAccount, "")) { try await verifier.verify(token: try impostor.token()) }
        let elsewhere = FakePubSubPusher(
            google: world.google, endpoint: URL(string: audience)!, identity: .init(audience: "https://other.test", serviceAccountEmail: email),
            transport: received)
        await #expect(throws: GooglePlayError(.wrongAudience, "")) { try await verifier.verify(token: try elsewhere.token()) }
        let unverified = FakePubSubPusher(
            google: world.google, endpoint: URL(string: audience)!,
            identity: .init(audience: audience, serviceAccountEmail: email, emailVerified: false), transport: received)
        await #expect(throws: GooglePlayError(.emailNotVerified, "")) { try await verifier.verify(token: try unverified.token()) }
    }

    @Test func tokenEndpointRefusesForeignAssertions() async throws {
        let world = try World()
        defer { Task { await world.server.shutdown() } }
        // A key file naming an account the fake does not trust.
        let stranger = ServiceAccountKey(
            clientEmail: "stranger@x.iam.gserviceaccount.com", privateKeyId: nil, privateKey: TestKeys.other, tokenURI: world.server.tokenURI)
        let provider = AccessTokenProvider(account: stranger, transport: CurlHTTP(), clock: world.clock)
        let error = await #expect(throws: GooglePlayError(.tokenExchangeFailed, "")) { try await provider.accessToken() }
        #expect(error?.status == 400)
        // An API call without a token is 401.
        let bare = try await CurlHTTP().send(
            OutboundRequest(method: "GET", url: URL(string: world.server.baseURL.absoluteString
                + "/androidpublisher/v3/applications/\(Self.package)/purchases/subscriptionsv2/tokens/x")!))
        #expect(bare.status == 401)
    }
}
