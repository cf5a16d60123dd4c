import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledKit
import EntitledServer
import Foundation
import HTTPServer
@testable import Storage
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// A real server (`buildApplication` on `sqlite::memory:`) and the simulator over loopback; the
// client's clocks, sleeper and network switch are fakes the tests move.

/// What happened, in order, across the transport and the fake store: the tests check that a
/// transaction was finished only after the server's 200 for it.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}

/// A monotonic clock the test moves; a new origin models a relaunch.
final class FakeMonotonic: MonotonicClock {
    private let now = Mutex<TimeInterval>(1_000)
    let origin: String
    init(origin: String = UUID().uuidString) { self.origin = origin }
    func elapsed() -> TimeInterval { now.withLock { $0 } }
    func advance(seconds: Int64) { now.withLock { $0 += Double(seconds) } }
}

/// A wall clock the device's owner sets.
final class FakeWall: WallClock {
    private let date: Mutex<Date>
    init(_ date: Date) { self.date = Mutex(date) }
    func now() -> Date { date.withLock { $0 } }
    func set(_ value: Date) { date.withLock { $0 = value } }
    func advance(seconds: Int64) { date.withLock { $0 = $0.addingTimeInterval(Double(seconds)) } }
}

/// Records the waits instead of waiting.
final class RecordingSleeper: Sleeper {
    private let waits = Mutex<[TimeInterval]>([])
    func sleep(seconds: TimeInterval) async throws { waits.withLock { $0.append(seconds) } }
    var all: [TimeInterval] { waits.withLock { $0 } }
}

/// URLSession to the server, or, while `offline`, to a closed loopback port (connection refused);
/// `failNext` answers that many requests with a synthetic 503 before passing them on.
final class SwitchTransport: HTTPTransport {
    struct State {
        var offline = false
        var failNext = 0
        var requests = 0
    }

    let state = Mutex(State())
    let base = URLSessionTransport()
    let log: EventLog

    init(log: EventLog) { self.log = log }

    var offline: Bool {
        get { state.withLock { $0.offline } }
        set { state.withLock { $0.offline = newValue } }
    }
    var requests: Int { state.withLock { $0.requests } }
    func failNext(_ count: Int) { state.withLock { $0.failNext = count } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (offline, fail) = state.withLock { state -> (Bool, Bool) in
            state.requests += 1
            defer { if state.failNext > 0 { state.failNext -= 1 } }
            return (state.offline, state.failNext > 0)
        }
        let line = "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")"
        if fail {
            log.append("\(line) → 503")
            let body = Data(#"{"type":"x","title":"t","status":503,"code":"STORAGE_UNAVAILABLE"}"#.utf8)
            return (body, HTTPURLResponse(url: request.url!, statusCode: 503, httpVersion: "HTTP/1.1", headerFields: [:])!)
        }
        var request = request
        if offline {
            var components = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)!
            components.port = 1  // nothing listens there: refused, as a server that is down
            request.url = components.url
        }
        do {
            let (data, response) = try await base.send(request)
            log.append("\(line) → \(response.statusCode)")
            return (data, response)
        } catch {
            log.append("\(line) → unreachable")
            throw error
        }
    }
}

/// A StoreKit transaction as the fake store hands it over.
struct FakeTransaction: StoreTransaction {
    let transactionID: String
    let productID: String
    let jwsRepresentation: String
    let store: FakeStore
    func finish() async { store.finished(transactionID) }
}

/// StoreKit, faked: purchases go to the simulator; it records purchases and finishes.
final class FakeStore: StoreGateway {
    struct State {
        var unfinished: [FakeTransaction] = []
        var current: [FakeTransaction] = []
        var appTransaction: String?
        var storefront: String?
        var finishes: [String: Int] = [:]
        var purchases: [(productID: String, token: UUID)] = []
        var offers: [SignedPurchaseOffer?] = []
        /// The products the store knows (StoreKit's catalog for the app).
        var products: [StoreProduct] = []
        var productQueries: [[String]] = []
    }

    let state = Mutex(State())
    let log: EventLog
    let onPurchase: @Sendable (String, UUID) async throws -> (id: String, jws: String)
    let stream: AsyncStream<any StoreTransaction>
    let continuation: AsyncStream<any StoreTransaction>.Continuation

    init(log: EventLog, onPurchase: @escaping @Sendable (String, UUID) async throws -> (id: String, jws: String)) {
        self.log = log
        self.onPurchase = onPurchase
        (stream, continuation) = AsyncStream.makeStream(of: (any StoreTransaction).self)
    }

    func transaction(id: String, product: String, jws: String) -> FakeTransaction {
        FakeTransaction(transactionID: id, productID: product, jwsRepresentation: jws, store: self)
    }

    func finished(_ id: String) {
        log.append("finish \(id)")
        state.withLock {
            $0.finishes[id, default: 0] += 1
            $0.unfinished.removeAll { $0.transactionID == id }
        }
    }

    func finishCount(_ id: String) -> Int { state.withLock { $0.finishes[id] ?? 0 } }
    var unfinishedIDs: [String] { state.withLock { $0.unfinished.map(\.transactionID) } }

    func purchase(productID: String, appAccountToken: UUID, offer: SignedPurchaseOffer?) async throws -> StorePurchaseResult {
        state.withLock {
            $0.purchases.append((productID, appAccountToken))
            $0.offers.append(offer)
        }
        let (id, jws) = try await onPurchase(productID, appAccountToken)
        let transaction = transaction(id: id, product: productID, jws: jws)
        // StoreKit keeps a purchased transaction unfinished until the app finishes it.
        state.withLock { $0.unfinished.append(transaction) }
        log.append("purchased \(id)")
        return .purchased(transaction)
    }

    func unfinished() async -> [any StoreTransaction] { state.withLock { $0.unfinished } }
    func currentEntitlements() async -> [any StoreTransaction] { state.withLock { $0.current } }
    func appTransaction() async throws -> String? { state.withLock { $0.appTransaction } }
    func updates() -> AsyncStream<any StoreTransaction> { stream }
    func storefront() async -> String? { state.withLock { $0.storefront } }
    func products(for ids: [String]) async throws -> [StoreProduct] {
        state.withLock { state in
            state.productQueries.append(ids)
            return state.products.filter { ids.contains($0.id) }
        }
    }
}

/// The server, the simulator, and the client's fakes.
struct KitWorld {
    static let tokenSecret = String(repeating: "k", count: 40)
    static let apiKey = "backend-secret-0123456789"
    static let day: Int64 = 86_400

    let simulator: Simulator
    let port: Int
    let serverClock: AppStoreSimulator.VirtualClock
    let monotonic = FakeMonotonic()
    let wall: FakeWall
    let log: EventLog
    let transport: SwitchTransport
    let sleeper = RecordingSleeper()
    let cacheDirectory: URL

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Real time passes: the server's clock, the device's monotonic clock and its wall clock move together.
    func advance(seconds: Int64) async throws {
        try await simulator.advance(to: serverClock.nowMilliseconds() + seconds * 1000)
        monotonic.advance(seconds: seconds)
        wall.advance(seconds: seconds)
    }

    /// A customer token as the app's backend mints it: valid for an hour of server time.
    func token(_ appUserId: String) -> String {
        CustomerTokenVerifier(secret: Array(Self.tokenSecret.utf8), hmac: Digests())
            .sign(subject: appUserId, expiresAt: serverClock.nowMilliseconds() / 1000 + 3600)
    }

    func configuration(monotonic: (any MonotonicClock)? = nil, disk: Bool = true, environment: String? = "Sandbox")
        -> EntitledClient.Configuration
    {
        EntitledClient.Configuration(
            cacheDirectory: disk ? cacheDirectory : nil, environment: environment,
            retry: RetryPolicy(maxAttempts: 3, initialDelay: 0.5), transport: transport, sleeper: sleeper,
            monotonicClock: monotonic ?? self.monotonic, wallClock: wall)
    }

    /// An app's client for `appUserId`.
    func client(_ appUserId: String, monotonic: (any MonotonicClock)? = nil, environment: String? = "Sandbox")
        -> EntitledClient
    {
        let world = self
        return EntitledClient(
            baseURL: baseURL, credentials: .customer(appUserId: appUserId) { world.token(appUserId) },
            configuration: configuration(monotonic: monotonic, environment: environment))
    }

    /// A backend's client (API key), memory-only cache.
    func backend() -> EntitledClient {
        EntitledClient(baseURL: baseURL, credentials: .apiKey(Self.apiKey), configuration: configuration(disk: false))
    }

    /// The simulator buys `product` for `customer` with `token`: the new transaction's id and JWS.
    func buy(_ customer: String, _ product: String, token: UUID) async throws -> (id: String, jws: String) {
        if await simulator.store.customers[customer] == nil {
            var add = ActionRequest("customer")
            add.customer = customer
            try await simulator.perform(add)
        }
        var purchase = ActionRequest("purchase")
        purchase.customer = customer
        purchase.product = product
        purchase.appAccountToken = token.uuidString.lowercased()
        try await simulator.perform(purchase)
        let id = try #require(await simulator.store.transactionOrder.last)
        return (id, try #require(try await simulator.signedTransaction(id)))
    }

    /// The app's `AppTransaction`, signed by the simulator's chain.
    func appTransaction() throws -> String {
        let now = serverClock.nowMilliseconds()
        return try simulator.ca.signer.sign(
            AppTransaction(
                receiptType: .sandbox, appAppleId: Catalog.demo.appAppleId, bundleId: Catalog.demo.bundleId,
                applicationVersion: "1", receiptCreationDate: now, originalPurchaseDate: now - 86_400_000,
                originalApplicationVersion: "1", appTransactionId: UUID().uuidString))
    }

    /// A fake store whose purchases the simulator makes for `customer`.
    func store(for customer: String) -> FakeStore {
        let world = self
        return FakeStore(log: log) { product, token in try await world.buy(customer, product, token: token) }
    }

    static let start: Int64 = 1_800_000_000_000  // 2027-01-15T08:00:00Z

    /// Runs `body` against a server with the test apps, or with `configured`'s apps (their roots
    /// replaced by the simulator's, Sandbox accepted and granted), the simulator selling `catalog`.
    static func run(
        configured: Configuration? = nil, catalog: AppStoreSimulator.Catalog = .demo, paywall: PaywallSeed? = nil,
        _ body: (KitWorld) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitledkit-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try SimulatorCA.ephemeral()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        var configuration = configured ?? Configuration()
        configuration.apiKeys = [APIKey(name: "backend", secret: apiKey, scopes: [.read, .write])]
        configuration.customerTokens = configured?.customerTokens ?? CustomerTokenSettings(secret: tokenSecret)
        for index in configuration.apps.indices {
            configuration.apps[index].appleRootCertificates = [rootFile.path]
            for list in [\App.environments, \App.grantEnvironments] where !configuration.apps[index][keyPath: list].contains("Sandbox") {
                configuration.apps[index][keyPath: list].append("Sandbox")
            }
        }
        if configured == nil { configuration.apps = [
            App(
                bundleId: Catalog.demo.bundleId, appAppleId: Catalog.demo.appAppleId, environments: ["Production", "Sandbox"],
                appleRootCertificates: [rootFile.path], gracePeriodDays: 0,
                products: [
                    Product(productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 2, entitlements: ["pro"]),
                    Product(
                        productId: "pro.yearly", type: .autoRenewable, subscriptionGroup: "pro", level: 1, entitlements: ["pro"],
                        storefronts: ["USA"]),
                    Product(productId: "lifetime", type: .nonConsumable, entitlements: ["lifetime"]),
                ])
        ] }
        configuration.paywall = paywall ?? configuration.paywall
        let serverClock = AppStoreSimulator.VirtualClock(milliseconds: start)
        let store = try await openStore(url: "sqlite::memory:", configuration: SQLiteStore.migratedTemplateConfiguration())
        let assembled = try await buildApplication(configuration: configuration, clock: serverClock, store: store)
        var settings = HTTPServer.Configuration()
        settings.host = "127.0.0.1"
        settings.port = 0
        settings.accessLog = nil
        settings.errorLog = nil
        let server = HTTPServer(configuration: settings, router: assembled.application.router)
        try server.start()
        // No transport: Apple's notifications are not delivered, so the server learns only what the client posts.
        let simulator = Simulator(catalog: catalog, ca: ca, clock: serverClock, transport: nil)
        let log = EventLog()
        let world = KitWorld(
            simulator: simulator, port: server.port, serverClock: serverClock,
            wall: FakeWall(Date(timeIntervalSince1970: Double(start) / 1000)), transport: SwitchTransport(log: log),
            cacheDirectory: folder.appendingPathComponent("cache"), log: log)
        do {
            try await body(world)
        } catch {
            await server.shutdown()
            await store.close()
            throw error
        }
        await server.shutdown()
        await store.close()
    }

    private init(
        simulator: Simulator, port: Int, serverClock: AppStoreSimulator.VirtualClock, wall: FakeWall,
        transport: SwitchTransport, cacheDirectory: URL, log: EventLog
    ) {
        self.simulator = simulator
        self.port = port
        self.serverClock = serverClock
        self.wall = wall
        self.transport = transport
        self.cacheDirectory = cacheDirectory
        self.log = log
    }
}

/// Polls `condition` until it holds or `seconds` pass (no fixed sleep races the work).
func eventually(within seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
