import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPClient
import HTTPServer
import Storage
import Synchronization
import Testing

/// Posts to the server unless the server is "down" (then every attempt fails, as a refused connection).
actor SwitchableTransport: NotificationTransport {
    var target: HTTPNotificationTransport?
    var down = false

    func point(at url: URL) { target = HTTPNotificationTransport(url: url) }
    func set(down: Bool) { self.down = down }

    func post(_ body: [UInt8]) async -> TransportOutcome {
        guard !down, let target else { return .failure("connection refused") }
        return await target.post(body)
    }
}

/// A Production simulator posting to a real server (SQLite) over loopback, the simulator's fake
/// Server API on another loopback port, and the server's reconciler pointed at it.
struct ReconcileWorld {
    let simulator: Simulator
    let transport: SwitchableTransport
    let port: Int
    let reconciler: Reconciler
    let store: any LedgerStore
    /// The server's durable jobs (backfills), run on demand by the tests.
    let jobRunner: JobRunner
    /// `entitled import`'s work for the app.
    let importer: CustomerImport
    /// The server's metrics (the reconciler reports into them).
    let metrics: ServerMetrics
    let close: @Sendable () async -> Void

    static let customers = ["alice", "bob", "carol"]

    /// - Parameters:
    ///   - receiptRoot: when set, the app's `receiptRootCertificates` (receipt tests).
    ///   - storeURL: the ledger (default: a SQLite file in `folder`).
    ///   - outbound: wraps the server's outbound client (a test that rewrites Apple's answers).
    ///   - configureApp: changes the app's configuration before the server is built.
    static func start(
        folder: URL, receiptRoot: [UInt8]? = nil, storeURL: String? = nil,
        outbound: (any OutboundHTTP) -> any OutboundHTTP = { $0 }, configureApp: (inout App) -> Void = { _ in }
    ) async throws -> ReconcileWorld {
        let ca = try SimulatorCA.ephemeral()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        let catalog = Catalog.demo
        let clock = AppStoreSimulator.VirtualClock(milliseconds: APIHarness.start)
        let transport = SwitchableTransport()
        let simulator = Simulator(catalog: catalog, environment: .production, ca: ca, clock: clock, transport: transport)
        let key = try P256PrivateKey()
        var appleRoutes = Router()
        FakeServerAPI.register(
            simulator, keys: [AppStoreSimulator.APIKey(keyId: "ABC123DEFG", issuerId: "57246542-96fe-1a63-e053-0824d011072a",
                                                       publicKey: try key.publicKey)], on: &appleRoutes)
        var appleSettings = HTTPServer.Configuration()
        appleSettings.host = "127.0.0.1"
        appleSettings.port = 0
        appleSettings.accessLog = nil
        appleSettings.errorLog = nil
        let apple = HTTPServer(configuration: appleSettings, router: appleRoutes)
        try apple.start()

        var configuration = APIHarness.configuration()
        configuration.apiKeys.append(EntitledConfig.APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]))
        var app = App(
            bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environments: ["Production"],
            appleRootCertificates: [rootFile.path], gracePeriodDays: 0,
            products: [
                Product(productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 2, entitlements: ["pro"]),
                Product(productId: "pro.yearly", type: .autoRenewable, subscriptionGroup: "pro", level: 1, entitlements: ["pro"]),
                Product(productId: "basic.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 3, entitlements: ["basic"]),
            ])
        app.serverAPI = ServerAPISettings(
            keyId: "ABC123DEFG", issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: try key.pkcs8PEM(),
            baseURL: URL(string: "http://127.0.0.1:\(apple.port)"))
        if let receiptRoot {
            let file = folder.appendingPathComponent("receipt-root.der")
            try Data(receiptRoot).write(to: file)
            app.receiptRootCertificates = [file.path]
        }
        app.consumptionAutoRespond = true
        configureApp(&app)
        configuration.apps = [app]
        let store = try await openStore(url: storeURL ?? "sqlite:\(folder.path)/ledger.sqlite")
        let assembled = try await buildApplication(
            configuration: configuration, clock: clock, store: store, fastPaths: testFastPaths, outbound: outbound(CurlHTTP()),
            apiSleeper: NoWait())
        var settings = HTTPServer.Configuration()
        settings.port = 0
        settings.accessLog = nil
        settings.errorLog = nil
        let server = HTTPServer(configuration: settings, router: assembled.application.router)
        try server.start()
        await transport.point(at: URL(string: "http://127.0.0.1:\(server.port)/v1/apple/notifications")!)
        let reconciler = try #require(assembled.reconcilers.first)
        return ReconcileWorld(
            simulator: simulator, transport: transport, port: server.port, reconciler: reconciler, store: store,
            jobRunner: try #require(assembled.jobRunner), importer: try #require(assembled.customerImport(bundleId: catalog.bundleId)),
            metrics: assembled.metrics,
            close: {
                await server.shutdown()
                await apple.shutdown()
                await store.close()
            })
    }

    func act(_ action: String, _ configure: (inout ActionRequest) -> Void = { _ in }) async throws {
        var request = ActionRequest(action)
        configure(&request)
        _ = try await simulator.perform(request)
    }

    /// The customer's answer, without its appAccountToken (random per run).
    func answer(_ id: String) async throws -> [String: Any] {
        let reply = try await Loopback.send(
            port: port, "GET", "/v1/customers/\(id)?environment=Production", headers: ["Authorization": APIHarness.reader])
        var json = reply.json
        json["appAccountToken"] = nil
        return json
    }

    /// Three subscribers; then, during `outage` (or with the server up), renewals, a cancellation,
    /// an upgrade and a refund, and enough virtual time for Apple to give up retrying.
    func play(outage: Bool) async throws -> (before: ReconcileReport, after: ReconcileReport) {
        for id in Self.customers { try await subscribeMonthly(id) }
        // Serve reconciles hourly; the last pass before the outage sets the watermark.
        let before = try await reconciler.runOnce()
        if outage { await transport.set(down: true) }
        _ = try await simulator.advance(by: ISODuration("P1M1D")!)  // three renewals
        try await act("autoRenew") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
            $0.enabled = false
        }
        try await act("upgrade") {
            $0.customer = "carol"
            $0.product = "pro.monthly"
            $0.to = "pro.yearly"
        }
        try await act("refund") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        // Longer than Apple's whole retry schedule (1 + 12 + 24 + 48 + 72 h).
        _ = try await simulator.advance(by: ISODuration("P8D")!)
        if outage { await transport.set(down: false) }
        let after = try await reconciler.runOnce()
        return (before, after)
    }

    /// Customer `id`, created on the server and at Apple, buys pro.monthly with the server's appAccountToken.
    func subscribeMonthly(_ id: String) async throws {
        let token = try await tokenOf(id)
        try await act("customer") { $0.customer = id }
        try await act("purchase") {
            $0.customer = id
            $0.product = "pro.monthly"
            $0.appAccountToken = token
        }
    }

    func tokenOf(_ id: String) async throws -> String {
        let reply = try await Loopback.send(
            port: port, "GET", "/v1/customers/\(id)?environment=Production", headers: ["Authorization": APIHarness.reader])
        return try #require(reply.json["appAccountToken"] as? String)
    }
}

@Suite(.serialized) struct ReconcileScenarioTests {
    static func withWorld<T>(
        receiptRoot: [UInt8]? = nil, storeURL: String? = nil, outbound: (any OutboundHTTP) -> any OutboundHTTP = { $0 },
        configureApp: (inout App) -> Void = { _ in }, _ body: (ReconcileWorld) async throws -> T
    ) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-reconcile-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let world = try await ReconcileWorld.start(
            folder: folder, receiptRoot: receiptRoot, storeURL: storeURL, outbound: outbound, configureApp: configureApp)
        do {
            let result = try await body(world)
            await world.close()
            return result
        } catch {
            await world.close()
            throw error
        }
    }

    @Test func outageLongerThanApplesRetriesIsRecoveredByReconciliation() async throws {
        let (steady, steadyAnswers) = try await Self.withWorld { world in
            let reports = try await world.play(outage: false)
            var answers: [String: NSDictionary] = [:]
            for id in ReconcileWorld.customers { answers[id] = try await world.answer(id) as NSDictionary }
            return (reports, answers)
        }
        // Uninterrupted: reconciliation finds nothing new.
        #expect(steady.after.new == 0 && steady.after.duplicates == steady.after.notifications && steady.after.notifications > 0)

        try await Self.withWorld { world in
            let reports = try await world.play(outage: true)
            let undelivered = await world.simulator.sender.history(onlyFailures: true)
            #expect(!undelivered.isEmpty)
            #expect(undelivered.allSatisfy { $0.attempts.count == 6 }, "Apple gave up on each after six attempts")
            #expect(reports.after.new == undelivered.count)
            #expect(reports.after.duplicates == reports.after.notifications - undelivered.count)
            #expect(
                reports.after.description
                    == "pages \(reports.after.pages), notifications \(reports.after.notifications), new \(undelivered.count), "
                    + "duplicates \(reports.after.notifications - undelivered.count)")
            for id in ReconcileWorld.customers {
                let answer = try await world.answer(id) as NSDictionary
                #expect(answer == steadyAnswers[id], "\(id): \(answer) vs \(String(describing: steadyAnswers[id]))")
            }
            // A second pass finds only duplicates.
            let again = try await world.reconciler.runOnce()
            #expect(again.new == 0 && again.duplicates == again.notifications)
        }
    }

    @Test func anAppAnotherProcessReconcilesIsSkipped() async throws {
        try await Self.withWorld { world in
            let state = world.store
            let key = ReconcileKey(bundleId: world.reconciler.bundleId, environment: "Production")
            let now = world.simulator.now
            #expect(try await state.acquireReconcileLease(key, owner: "other-server", now: now, expiresAt: now + 60_000) != .held)
            let report = try await world.reconciler.runOnce()
            #expect(report.skipped == [key] && report.pages == 0)
            #expect(await world.simulator.serverAPIRequests == 0)
            // Once the other lease expires, this process takes over.
            _ = try await world.simulator.advance(by: ISODuration("P1D")!)
            let later = try await world.reconciler.runOnce()
            #expect(later.skipped.isEmpty && later.pages == 1)
        }
    }

    @Test func aFailedPassLeavesTheWatermarkWhereItWas() async throws {
        try await Self.withWorld { world in
            let state = world.store
            let key = ReconcileKey(bundleId: world.reconciler.bundleId, environment: "Production")
            _ = try await world.reconciler.runOnce()
            let first = world.simulator.now
            _ = try await world.simulator.advance(by: ISODuration("P1D")!)
            // Apple answers 429 longer than the client retries: the pass fails.
            await world.simulator.throttleServerAPI(requests: 50)
            await #expect(throws: ReconcileError.self) { _ = try await world.reconciler.runOnce() }
            await world.simulator.throttleServerAPI(requests: 0)
            let lease = try await state.acquireReconcileLease(key, owner: "probe", now: world.simulator.now, expiresAt: world.simulator.now + 1)
            #expect(lease == .acquired(watermark: first), "the failed pass released its lease and kept the watermark")
        }
    }

    /// The lag an operator alerts on: the watermark's time moves with each good pass and stays
    /// where it was after a failed one, which is counted.
    @Test func passesAndTheWatermarkAreMetrics() async throws {
        try await Self.withWorld { world in
            let app = world.reconciler.bundleId
            func value(_ prefix: String) -> Double? {
                world.metrics.registry.render().split(separator: "\n").first { $0.hasPrefix(prefix) }
                    .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
            }
            let watermark = "entitled_reconcile_watermark_timestamp_seconds{app=\"\(app)\",environment=\"Production\"} "
            let passes = "entitled_reconcile_passes_total{app=\"\(app)\",environment=\"Production\",outcome="
            #expect(value(watermark) == nil, "no pass yet, no watermark series")
            _ = try await world.reconciler.runOnce()
            let first = world.simulator.now
            #expect(value(watermark) == Double(first) / 1000)
            #expect(value(passes + "\"ok\"}") == 1)
            _ = try await world.simulator.advance(by: ISODuration("P1D")!)
            await world.simulator.throttleServerAPI(requests: 50)
            await #expect(throws: ReconcileError.self) { _ = try await world.reconciler.runOnce() }
            await world.simulator.throttleServerAPI(requests: 0)
            #expect(value(passes + "\"failed\"}") == 1)
            #expect(value(watermark) == Double(first) / 1000, "a failed pass leaves it")
        }
    }

    @Test func serveReconcilesEveryInterval() async throws {
        try await Self.withWorld { world in
            let sleeper = StopAfter(passes: 3)
            let passes = Mutex(0)
            await world.reconciler.run(sleeper: sleeper) { result in
                if case .success = result { passes.withLock { $0 += 1 } }
            }
            #expect(passes.withLock { $0 } == 3)
            #expect(sleeper.waits.withLock { $0 } == [3_600_000, 3_600_000, 3_600_000])
        }
    }
}

/// Records the waits of a periodic loop and ends it (by throwing, as a cancelled sleep does) after `passes`.
final class StopAfter: Sleeper {
    let waits = Mutex<[Int64]>([])
    let passes: Int
    init(passes: Int) { self.passes = passes }
    func sleep(milliseconds: Int64) async throws {
        let count = waits.withLock {
            $0.append(milliseconds)
            return $0.count
        }
        if count >= passes { throw CancellationError() }
    }
}
