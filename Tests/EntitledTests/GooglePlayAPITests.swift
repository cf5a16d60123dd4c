import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import HTTPServer
@testable import Storage
import Testing

/// Google Play end to end: the fake Google (Developer API, token endpoint, JWKS, OIDC-signed
/// Pub/Sub pushes) against the real server on SQLite and PostgreSQL.
@Suite(.serialized) struct GooglePlayAPITests {
    static let packageName = "com.example.android"
    static let audience = "https://entitled.test/v1/google/notifications"
    static let pushAccount = "play-push@fake-project.iam.gserviceaccount.com"
    static let period: Int64 = 30 * 86_400

    /// The fake Google's signing key and the service account's, made once per test process:
    /// generating an RSA key costs about a fifth of a second of CPU, and every world needs both.
    /// A forger's key is made afresh where a test needs one.
    static let googleKey = try! RSAPrivateKey()
    static let serviceAccountKey = try! RSAPrivateKey()

    /// The fake Google, and servers on fresh stores that trust it.
    final class World: @unchecked Sendable {
        let clock = VirtualClock(APIHarness.start)
        let google: FakeGoogle
        let fake: FakeGoogleServer
        let configuration: Configuration
        var servers: [(server: HTTPServer, store: any LedgerStore)] = []
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-play-\(UUID())")

        init(price: Money? = nil, unitPrice: Money? = nil) throws {
            google = try FakeGoogle(
                products: [
                    FakePlayProduct(
                        productId: "premium", kind: .subscription(basePlans: ["monthly"], periodSeconds: GooglePlayAPITests.period), price: price),
                    FakePlayProduct(productId: "premium.plus", kind: .subscription(basePlans: ["monthly"], periodSeconds: GooglePlayAPITests.period)),
                    FakePlayProduct(productId: "lifetime", kind: .oneTime(consumable: false), price: unitPrice),
                    FakePlayProduct(productId: "coins", kind: .oneTime(consumable: true), price: unitPrice),
                ], clock: clock, signingKey: GooglePlayAPITests.googleKey)
            fake = try FakeGoogleServer(google: google)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let keyFile = folder.appendingPathComponent("service-account.json")
            try Data(try fake.serviceAccountKeyFile(key: GooglePlayAPITests.serviceAccountKey)).write(to: keyFile)
            var configuration = APIHarness.configuration()
            configuration.apps = []
            configuration.playApps = [
                PlayApp(
                    packageName: GooglePlayAPITests.packageName,
                    googlePlay: GooglePlaySettings(
                        serviceAccountKeyFile: keyFile.path, apiBaseURL: fake.baseURL,
                        pubsub: PubSubSettings(
                            audience: GooglePlayAPITests.audience, serviceAccountEmail: GooglePlayAPITests.pushAccount,
                            certsURL: fake.certsURL),
                        // Asked only by the suites about prices: the others count the jobs of
                        // acknowledgements and refund reviews alone.
                        orderPrices: false),
                    products: [
                        PlayProduct(productId: "premium", type: .autoRenewable, subscriptionGroup: "premium", entitlements: ["pro"]),
                        PlayProduct(productId: "premium.plus", type: .autoRenewable, subscriptionGroup: "premium", entitlements: ["pro", "plus"]),
                        PlayProduct(productId: "lifetime", type: .nonConsumable, entitlements: ["extras"]),
                        PlayProduct(productId: "coins", type: .consumable, entitlements: []),
                    ])
            ]
            self.configuration = configuration
        }

        /// Starts one more server on a fresh store of `backend`; answers its index.
        func startServer(_ backend: StoredBackend) async throws -> Int {
            let store = try await backend.open()
            let (server, _) = try await EntitledTests.startServer(configuration: configuration, store: store, clock: clock)
            servers.append((server, store))
            return servers.count - 1
        }

        /// Starts one more server on a fresh store of `backend` whose events are released at the
        /// commit (no settle window), so the feed shows them as the pushes land; answers its application.
        func startFeedServer(_ backend: StoredBackend) async throws -> AssembledServer {
            var configuration = self.configuration
            configuration.events.settleSeconds = 0
            let store = try await backend.open()
            let assembled = try await buildApplication(configuration: configuration, clock: clock, store: store, fastPaths: testFastPaths)
            servers.append((try startQuietServer(router: assembled.application.router), store))
            return assembled
        }

        func pusher(_ index: Int, identity: FakePubSubPusher.Identity? = nil, google: FakeGoogle? = nil) -> FakePubSubPusher {
            FakePubSubPusher(
                google: google ?? self.google,
                endpoint: URL(string: "http://127.0.0.1:\(servers[index].server.port)/v1/google/notifications")!,
                identity: identity ?? .init(audience: GooglePlayAPITests.audience, serviceAccountEmail: GooglePlayAPITests.pushAccount),
                transport: CurlHTTP())
        }

        func push(_ index: Int, _ notification: DeveloperNotification, messageId: String, pusher: FakePubSubPusher? = nil) async throws -> Int {
            let request = try (pusher ?? self.pusher(index)).request(for: notification, messageId: messageId)
            return try await CurlHTTP().send(request).status
        }

        func send(_ index: Int, _ method: String, _ path: String, json: String? = nil) async throws -> Loopback.Reply {
            try await Loopback.send(
                port: servers[index].server.port, method, path, headers: ["Authorization": APIHarness.writer],
                body: Array((json ?? "").utf8))
        }

        func postPurchase(_ index: Int, _ customer: String, productId: String, token: String) async throws -> Loopback.Reply {
            try await send(
                index, "POST", "/v1/customers/\(customer)/google/purchases",
                json: #"{"packageName":"\#(GooglePlayAPITests.packageName)","productId":"\#(productId)","purchaseToken":"\#(token)"}"#)
        }

        /// The parts of a customer's answer that facts decide (not its server-made token).
        func answer(_ index: Int, _ customer: String) async throws -> String {
            let reply = try await send(index, "GET", "/v1/customers/\(customer)")
            guard reply.status == 200 else { return "status \(reply.status)" }
            let json = reply.json
            let parts: [String: Any] = ["entitlements": json["entitlements"] ?? NSNull(), "subscriptions": json["subscriptions"] ?? NSNull(),
                                        "nonSubscriptions": json["nonSubscriptions"] ?? NSNull(), "state": json["state"] ?? NSNull()]
            return String(decoding: try JSONSerialization.data(withJSONObject: parts, options: [.sortedKeys]), as: UTF8.self)
        }

        func factCount(_ index: Int) async throws -> Int64 {
            let store = servers[index].store
            if let sqlite = store as? SQLiteStore { return try await sqlite._scalar("SELECT COUNT(*) FROM facts") }
            let postgres = try #require(store as? PostgresStore)
            return try await postgres._scalar("SELECT COUNT(*) FROM facts")
        }

        func close() async {
            for (server, store) in servers {
                await server.shutdown()
                await store.close()
            }
            await fake.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static func entitlement(_ reply: Loopback.Reply, _ id: String) -> [String: Any]? {
        (reply.json["entitlements"] as? [String: Any])?[id] as? [String: Any]
    }

    /// A lifecycle delivered to server 0 as it happens, and to server 1 afterwards, shuffled and
    /// with every message twice: the same answer. The app posts the first token to both.
    @Test(arguments: StoredBackend.all)
    func lifecycleInOrderShuffledAndDuplicatedGivesTheSameAnswer(_ backend: StoredBackend) async throws {
        let world = try World()
        defer { Task { await world.close() } }
        let live = try await world.startServer(backend)
        let late = try await world.startServer(backend)
        var sent: [(DeveloperNotification, String)] = []
        var sequence = 0
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                let id = "m-\(sequence)"
                #expect(try await world.push(live, notification, messageId: id) == 200)
                sent.append((notification, id))
            }
        }

        let token = try world.google.buySubscription(packageName: Self.packageName, productId: "premium")
        let posted = try await world.postPurchase(live, "alice", productId: "premium", token: token)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(Self.entitlement(posted, "pro")?["store"] as? String == "playStore")
        #expect(Self.entitlement(posted, "pro")?["active"] as? Bool == true)
        #expect(try await world.postPurchase(late, "alice", productId: "premium", token: token).status == 200)
        try await deliver()

        world.clock.advance(by: 10 * 86_400_000)
        try world.google.cancel(token)
        try await deliver()
        var reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "pro")?["willRenew"] as? Bool == false)
        #expect(Self.entitlement(reply, "pro")?["active"] as? Bool == true)

        world.clock.advance(by: 86_400_000)
        let upgraded = try world.google.upgrade(token, to: "premium.plus")
        try await deliver()
        reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "plus")?["active"] as? Bool == true, "\(reply.text)")
        #expect(Self.entitlement(reply, "pro")?["transactionId"] as? String == upgraded)
        #expect(Self.entitlement(reply, "pro")?["originalTransactionId"] as? String == token)
        let subscriptions = reply.json["subscriptions"] as? [[String: Any]] ?? []
        #expect(subscriptions.count == 1)

        world.clock.advance(by: Self.period * 1000)
        try world.google.renew(upgraded)
        try await deliver()
        world.clock.advance(by: 86_400_000)
        try world.google.failRenewal(upgraded)
        try await deliver()
        reply = try await world.send(live, "GET", "/v1/customers/alice")
        #expect(Self.entitlement(reply, "plus")?["status"] as? String == "gracePeriod", "\(reply.text)")

        // The same messages, shuffled, each twice, to the server that saw none of them.
        var rng = SystemRandomNumberGenerator()
        let replayed = (sent + sent).shuffled(using: &rng)
        for (notification, id) in replayed {
            #expect(try await world.push(late, notification, messageId: id) == 200)
        }
        let facts = try await world.factCount(late)
        for (notification, id) in replayed.prefix(3) {
            #expect(try await world.push(late, notification, messageId: id) == 200)
        }
        #expect(try await world.factCount(late) == facts, "a repeated messageId stores nothing")
        #expect(try await world.answer(live, "alice") == world.answer(late, "alice"))
    }

    /// Pushes that fail authentication are 401 and change nothing.
    @Test(arguments: StoredBackend.all)
    func forgedExpiredWrongAudienceAndWrongAccountPushesChangeNothing(_ backend: StoredBackend) async throws {
        let world = try World()
        defer { Task { await world.close() } }
        let server = try await world.startServer(backend)
        let token = try world.google.buySubscription(packageName: Self.packageName, productId: "premium")
        #expect(try await world.postPurchase(server, "bob", productId: "premium", token: token).status == 200)
        _ = world.google.takeNotifications()
        world.clock.advance(by: 86_400_000)
        try world.google.cancel(token)
        let notification = try #require(world.google.takeNotifications().first)
        let before = try await world.answer(server, "bob")
        let facts = try await world.factCount(server)

        // Another key under Google's key id; a token issued two hours ago; the wrong audience; the
        // wrong service account; an unverified email; no token at all.
        let forger = try FakeGoogle(products: [], clock: world.clock, signingKeyId: world.google.signingKeyId)
        let past = VirtualClock(APIHarness.start - 2 * 3_600_000)
        let earlier = try FakeGoogle(products: [], clock: past, signingKey: world.google.signingKey, signingKeyId: world.google.signingKeyId)
        let cases: [(String, FakePubSubPusher, String)] = [
            ("forged", world.pusher(server, google: forger), "GOOGLE_PUSH_BAD_SIGNATURE"),
            ("expired", world.pusher(server, google: earlier), "GOOGLE_PUSH_TOKEN_EXPIRED"),
            ("wrong audience", world.pusher(server, identity: .init(audience: "https://evil.test/", serviceAccountEmail: Self.pushAccount)),
             "GOOGLE_PUSH_WRONG_AUDIENCE"),
            ("wrong account", world.pusher(server, identity: .init(audience: Self.audience, serviceAccountEmail: "evil@evil.iam.gserviceaccount.com")),
             "GOOGLE_PUSH_WRONG_ACCOUNT"),
            ("unverified", world.pusher(server, identity: .init(audience: Self.audience, serviceAccountEmail: Self.pushAccount, emailVerified: false)),
             "GOOGLE_PUSH_EMAIL_NOT_VERIFIED"),
        ]
        for (index, (label, pusher, code)) in cases.enumerated() {
            let request = try pusher.request(for: notification, messageId: "bad-\(index)")
            let reply = try await Loopback.send(
                port: world.servers[server].server.port, "POST", "/v1/google/notifications", headers: request.headers, body: request.body ?? [])
            #expect(reply.status == 401, "\(label)")
            #expect(reply.code == code, "\(label): \(reply.text)")
        }
        let bare = try world.pusher(server).request(for: notification, messageId: "bare")
        let unauthenticated = try await Loopback.send(
            port: world.servers[server].server.port, "POST", "/v1/google/notifications", headers: ["Content-Type": "application/json"],
            body: bare.body ?? [])
        #expect(unauthenticated.status == 401 && unauthenticated.code == "GOOGLE_PUSH_MISSING_TOKEN")
        #expect(try await world.factCount(server) == facts)
        #expect(try await world.answer(server, "bob") == before)

        // The genuine push of the same change is then taken, with an id none of the refused ones used up.
        #expect(try await world.push(server, notification, messageId: "bad-0") == 200)
        let after = try await world.send(server, "GET", "/v1/customers/bob")
        #expect(Self.entitlement(after, "pro")?["willRenew"] as? Bool == false)
    }

    /// A one-time product posted by the app, then refunded through a voided-purchase push; an
    /// unknown package or token is refused with the table's codes.
    @Test func oneTimeProductAndRefusals() async throws {
        let world = try World()
        defer { Task { await world.close() } }
        let server = try await world.startServer(.sqlite)
        let token = try world.google.buyProduct(packageName: Self.packageName, productId: "lifetime")
        let posted = try await world.postPurchase(server, "carol", productId: "lifetime", token: token)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(Self.entitlement(posted, "extras")?["active"] as? Bool == true)
        _ = world.google.takeNotifications()
        try world.google.refundProduct(token)
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await world.push(server, notification, messageId: "v-\(index)") == 200)
        }
        let refunded = try await world.send(server, "GET", "/v1/customers/carol")
        #expect(Self.entitlement(refunded, "extras")?["status"] as? String == "refunded", "\(refunded.text)")

        let unknownToken = try await world.postPurchase(server, "carol", productId: "lifetime", token: "no-such-token")
        #expect(unknownToken.status == 404 && unknownToken.code == "GOOGLE_PURCHASE_NOT_FOUND", "\(unknownToken.text)")
        let unknownPackage = try await world.send(
            server, "POST", "/v1/customers/carol/google/purchases",
            json: #"{"packageName":"com.other.app","productId":"lifetime","purchaseToken":"t"}"#)
        #expect(unknownPackage.status == 404 && unknownPackage.code == "APP_NOT_FOUND")
        let missing = try await world.send(server, "POST", "/v1/customers/carol/google/purchases", json: #"{"packageName":"x"}"#)
        #expect(missing.status == 400 && missing.code == "INVALID_REQUEST")
        let anonymous = try await Loopback.send(
            port: world.servers[server].server.port, "POST", "/v1/customers/carol/google/purchases", body: Array("{}".utf8))
        #expect(anonymous.status == 401)
    }
}
