import EntitledConfig
import EntitledCrypto
import EntitledServer
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import HTTPServer
@testable import Storage
import Testing

/// The fake Google (Developer API, token endpoint, JWKS, OIDC-signed Pub/Sub pushes), and servers
/// on fresh stores that trust it.
final class PlayWorld: @unchecked Sendable {
    static let packageName = "com.example.android"
    static let audience = "https://entitled.test/v1/google/notifications"
    static let pushAccount = "play-push@fake-project.iam.gserviceaccount.com"
    static let period: Int64 = 30 * 86_400

    /// The fake Google's signing key and the service account's, made once per test process:
    /// generating an RSA key costs about a fifth of a second of CPU, and every world needs both.
    /// A forger's key is made afresh where a test needs one.
    static let googleKey = try! RSAPrivateKey()
    static let serviceAccountKey = try! RSAPrivateKey()

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
                    productId: "premium", kind: .subscription(basePlans: ["monthly"], periodSeconds: PlayWorld.period), price: price),
                FakePlayProduct(productId: "premium.plus", kind: .subscription(basePlans: ["monthly"], periodSeconds: PlayWorld.period)),
                FakePlayProduct(productId: "lifetime", kind: .oneTime(consumable: false), price: unitPrice),
                FakePlayProduct(productId: "coins", kind: .oneTime(consumable: true), price: unitPrice),
            ], clock: clock, signingKey: PlayWorld.googleKey)
        fake = try FakeGoogleServer(google: google)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyFile = folder.appendingPathComponent("service-account.json")
        try Data(try fake.serviceAccountKeyFile(key: PlayWorld.serviceAccountKey)).write(to: keyFile)
        var configuration = APIHarness.configuration()
        configuration.apps = []
        configuration.playApps = [
            PlayApp(
                packageName: PlayWorld.packageName,
                googlePlay: GooglePlaySettings(
                    serviceAccountKeyFile: keyFile.path, apiBaseURL: fake.baseURL,
                    pubsub: PubSubSettings(
                        audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount,
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
        let (server, _) = try await EntitledTestSupport.startServer(configuration: configuration, store: store, clock: clock)
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
            identity: identity ?? .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount),
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
            json: #"{"packageName":"\#(PlayWorld.packageName)","productId":"\#(productId)","purchaseToken":"\#(token)"}"#)
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
