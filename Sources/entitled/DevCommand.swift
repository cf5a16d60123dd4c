import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Storage
import Synchronization

/// `entitled dev`: the server and the App Store simulator wired together on one virtual clock,
/// with a seeded scenario and a dashboard — the whole lifecycle on a laptop.
enum DevCommand: Command {
    static let name = "dev"
    static let summary = "server + App Store simulator on a virtual clock, seeded, with a dashboard"
    static let help = """
        Usage: entitled dev [--listen HOST:PORT] [--control HOST:PORT] [--data DIR] [--day-every SECONDS]
                            [--no-seed]

        Runs the server (SQLite in DIR/entitled.sqlite) and the App Store simulator (its CA in
        DIR/simulator) together. The simulator signs every notification with its own CA, which the
        server trusts, and posts it to the server; the server takes "now" from the simulator's
        virtual clock (only in this mode). A seeded scenario buys subscriptions for a few customers
        and the virtual clock advances one day every --day-every seconds, so renewals, a billing
        failure and expiries happen while you watch.

        Open http://HOST:PORT/ for the dashboard. The API key for /v1 is printed at start.

        Options:
          --listen HOST:PORT   the server (default 127.0.0.1:8080)
          --control HOST:PORT  the simulator's control API (default 127.0.0.1:8081; see docs/simulator.md)
          --data DIR           where the database and the simulator's CA live (default ./data/dev)
          --day-every SECONDS  real seconds per virtual day (default 2; 0 stops the clock)
          --no-seed            start without the seeded customers
        """

    /// The development API key (this mode only; printed at start).
    static let devKey = "dev-key-entitled-local-only"

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let loader = ConfigurationLoader(environment: [:])
        let listen = try arguments.option("--listen") ?? "127.0.0.1:8080"
        let control = try arguments.option("--control") ?? "127.0.0.1:8081"
        let data = try arguments.option("--data") ?? "./data/dev"
        let dayEvery = try arguments.option("--day-every", as: "a number of seconds") { Double($0).flatMap { $0 >= 0 ? $0 : nil } } ?? 2
        let seed = !arguments.flag("--no-seed")
        try arguments.finish()
        guard let controlAddress = ListenAddress(parsing: control) else { throw UsageError("--control: '\(control)' is not HOST:PORT") }

        let folder = URL(fileURLWithPath: data)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let ca = try SimulatorCA.loadOrCreate(in: folder.appendingPathComponent("simulator"))
        let rootFile = folder.appendingPathComponent("simulator-root.der")
        try Data(ca.rootDER).write(to: rootFile)
        let catalog = Catalog.demo

        var configuration: Configuration
        do {
            configuration = try loader.load(path: nil, listen: listen, database: "sqlite:\(folder.path)/entitled.sqlite")
        } catch {
            throw UsageError("configuration: \(error.description)")
        }
        configuration.apiKeys = [APIKey(name: "dev", secret: devKey, scopes: [.read, .write, .admin])]
        configuration.apps = [
            App(
                bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environments: ["Sandbox", "Production"],
                appleRootCertificates: [rootFile.path], gracePeriodDays: 16,
                products: catalog.products.map(product(from:)))
        ]

        // The composition root: the only place `dev` reads the wall clock, to start the virtual one.
        let clock = AppStoreSimulator.VirtualClock(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let serverClock = VirtualServerClock(clock: clock)
        let store = try await ServeCommand.openDatabase(configuration.database)
        let policy = FactMapper.policy(for: configuration)
        let ledger = StorageLedger(store: store, policy: policy)
        let verifier: AppStoreVerifier
        do {
            verifier = try AppStoreVerifier(apps: configuration.apps, clock: serverClock)
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        let application = Application(configuration: configuration, verifier: verifier, ledger: ledger, clock: serverClock)

        let simulatorBox = SimulatorBox()
        var router = application.router
        Dashboard.register(on: &router, ledger: ledger, policy: policy, clock: serverClock, simulator: simulatorBox)
        let server = HTTPServer(configuration: application.serverConfiguration(accessLog: nil), router: router)
        do {
            try server.start()
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        let notificationsURL = URL(string: "http://\(configuration.listen.host):\(server.port)/v1/apple/notifications")!
        let simulator = Simulator(
            catalog: catalog, ca: ca, clock: clock, transport: URLSessionTransport(url: notificationsURL))
        simulatorBox.set(simulator)

        var controlSettings = HTTPServer.Configuration()
        controlSettings.host = controlAddress.host
        controlSettings.port = controlAddress.port
        controlSettings.accessLog = nil
        let controlServer = HTTPServer(configuration: controlSettings, router: ControlAPI.router(for: simulator))
        do {
            try controlServer.start()
        } catch {
            await server.shutdown()
            await store.close()
            throw RuntimeError("control API: \(error.description)")
        }

        ServeCommand.log(
            event: "listening",
            [
                "address": "\(configuration.listen.host):\(server.port)",
                "control": "\(controlAddress.host):\(controlServer.port)", "database": configuration.database,
                "apiKey": devKey, "dashboard": "http://\(configuration.listen.host):\(server.port)/",
            ])
        if seed {
            do {
                try await seedScenario(simulator: simulator, ledger: ledger, policy: policy, clock: serverClock)
            } catch {
                printError("entitled dev: the seeded scenario failed: \(error)")
            }
        }
        let ticker = Task {
            guard dayEvery > 0 else { return }
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int(dayEvery * 1000)))
                _ = try? await simulator.advance(by: ISODuration("P1D")!)
            }
        }

        let signal = await Signals.waitForTermination()
        ServeCommand.log(event: "shutting down", ["signal": signal])
        ticker.cancel()
        await controlServer.shutdown()
        await server.shutdown()
        await store.close()
        ServeCommand.log(event: "stopped", [:])
        return ExitStatus.ok
    }

    /// The server's product for a simulator product: a subscription grants its group's name,
    /// a non-consumable its own id.
    static func product(from simulated: SimulatedProduct) -> Product {
        switch simulated.kind {
        case .autoRenewable:
            return Product(
                productId: simulated.id, type: .autoRenewable, subscriptionGroup: simulated.group, level: simulated.level,
                entitlements: [simulated.group ?? simulated.id])
        case .nonConsumable:
            return Product(productId: simulated.id, type: .nonConsumable, entitlements: [simulated.id])
        case .consumable:
            return Product(productId: simulated.id, type: .consumable)
        case .nonRenewing:
            return Product(
                productId: simulated.id, type: .nonRenewing, duration: simulated.period?.description ?? "P1M",
                entitlements: [simulated.group ?? simulated.id])
        }
    }

    /// A few customers, each linked to the server by its appAccountToken, in different situations.
    static func seedScenario(simulator: Simulator, ledger: StorageLedger, policy: Policy, clock: any ServerClock) async throws {
        func token(_ id: String) async throws -> String {
            let context = EvaluationContext(policy: policy, environment: .sandbox, now: clock.nowMilliseconds())
            return try await ledger.customer(appUserId: id, context: context).customer.appAccountToken
        }
        func act(_ action: String, _ configure: (inout ActionRequest) -> Void) async throws {
            var request = ActionRequest(action)
            configure(&request)
            _ = try await simulator.perform(request)
        }
        let plans: [(String, String, String?)] = [
            ("alice", "pro.monthly", nil), ("bob", "pro.yearly", nil), ("carol", "pro.monthly", "intro"),
            ("dave", "lifetime", nil), ("erin", "basic.monthly", nil),
        ]
        for (id, product, offer) in plans {
            let appAccountToken = try await token(id)
            try await act("customer") { $0.customer = id }
            try await act("purchase") {
                $0.customer = id
                $0.product = product
                $0.offer = offer
                $0.appAccountToken = appAccountToken
            }
        }
        // Carol's card fails at her next renewal; Erin turns auto-renew off.
        try await act("paymentMethod") {
            $0.customer = "carol"
            $0.paymentMethod = "failing"
        }
        try await act("autoRenew") {
            $0.customer = "erin"
            $0.product = "basic.monthly"
            $0.enabled = false
        }
    }
}

/// The simulator's virtual clock as the server's clock (`entitled dev` and tests only).
struct VirtualServerClock: ServerClock {
    let clock: AppStoreSimulator.VirtualClock
    func nowMilliseconds() -> Int64 { clock.nowMilliseconds() }
}

/// The simulator, set once it exists (the dashboard's routes are built before it).
final class SimulatorBox: Sendable {
    private let value = Mutex<Simulator?>(nil)
    func set(_ simulator: Simulator) { value.withLock { $0 = simulator } }
    var simulator: Simulator? { value.withLock { $0 } }
}
