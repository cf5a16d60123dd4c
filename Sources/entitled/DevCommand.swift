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
        failure, a refund and expiries happen while you watch.

        Open http://HOST:PORT/ for the dashboard: live counts and charts over virtual time, each
        customer's timeline, and controls (buy, cancel auto-renew, fail or fix the card, refund,
        add a customer, advance a day or a month, pause, speed). Its JSON is under /dev/ (see
        docs/simulator.md), served by this command only, with the API key printed at start.

        Options:
          --listen HOST:PORT   the server (env ENTITLED_LISTEN; default 127.0.0.1:8080; the dashboard
                               answers loopback names only unless HOST is 0.0.0.0 or ::)
          --control HOST:PORT  the simulator's control API (default 127.0.0.1:8081; see docs/simulator.md)
          --data DIR           where the database and the simulator's CA live (default ./data/dev)
          --day-every SECONDS  real seconds per virtual day (default 2, at least 0.05; 0 starts paused)
          --no-seed            start without the seeded customers
        """

    /// The development API key (this mode only; printed at start).
    static let devKey = "dev-key-entitled-local-only"

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        // The address as `serve` takes it: --listen, then ENTITLED_LISTEN, then the default. The other
        // ENTITLED_* settings are serve's (dev owns its database and configuration).
        let environment = ProcessInfo.processInfo.environment.filter { $0.key == "ENTITLED_LISTEN" }
        let loader = ConfigurationLoader(environment: environment)
        let listen = try arguments.option("--listen")
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
        let cache = fastPaths.projectionCache()
        let ledger = FactLedger(store: store, policy: policy, cache: cache)
        let verifier: AppStoreVerifier
        do {
            verifier = try AppStoreVerifier(apps: configuration.apps, clock: serverClock, codec: fastPaths.codec)
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        let application = Application(
            configuration: configuration, verifier: verifier, ledger: ledger, clock: serverClock, cache: cache)

        let driverBox = DriverBox()
        var router = application.router
        Dashboard.register(on: &router, driver: driverBox, key: devKey, listenHost: configuration.listen.host)
        let server = HTTPServer(configuration: application.serverConfiguration(accessLog: nil), router: router)
        let signals = TerminationSignals()
        do {
            try server.start()
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        let notificationsURL = URL(string: "http://\(configuration.listen.host):\(server.port)/v1/apple/notifications")!
        let simulator = Simulator(
            catalog: catalog, ca: ca, clock: clock, transport: URLSessionTransport(url: notificationsURL))
        let driver = DevDriver(
            simulator: simulator, ledger: ledger, policy: policy,
            pace: DevDriver.Pace(running: dayEvery > 0, dayEvery: dayEvery > 0 ? max(DevDriver.minimumDayEvery, dayEvery) : 2))
        driverBox.set(driver)

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

        if !isLoopback(configuration.listen.host) {
            ServeCommand.log(
                event: "warning",
                ["detail": "entitled dev listens beyond loopback: anyone who can reach it can drive the simulator with the printed key"])
        }
        if seed {
            do {
                try await seedScenario(driver: driver)
            } catch {
                printError("entitled dev: the seeded scenario failed: \(error)")
            }
        }
        await driver.sample()
        // Announced once seeded, so that whoever opens the dashboard on this line sees customers.
        ServeCommand.log(
            event: "listening",
            [
                "address": "\(configuration.listen.host):\(server.port)",
                "control": "\(controlAddress.host):\(controlServer.port)", "database": configuration.database,
                "apiKey": devKey, "dashboard": "http://\(configuration.listen.host):\(server.port)/",
            ])
        let ticker = Task { await driver.autoAdvance() }

        let signal = await signals.wait()
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

    /// A few customers, each linked to the server by its appAccountToken (``DevDriver/act(_:)`` fills
    /// it in), in different situations, and a refund a few virtual days in.
    static func seedScenario(driver: DevDriver) async throws {
        func act(_ action: String, _ configure: (inout ActionRequest) -> Void) async throws {
            var request = ActionRequest(action)
            configure(&request)
            _ = try await driver.act(request)
        }
        // The same grace period as the server's configuration, as App Store Connect would have it.
        try await act("gracePeriod") { $0.days = 16 }
        let plans: [(String, String, String?)] = [
            ("alice", "pro.monthly", nil), ("bob", "pro.yearly", nil), ("carol", "pro.monthly", "intro"),
            ("dave", "lifetime", nil), ("erin", "basic.monthly", nil), ("frank", "pro.monthly", nil),
        ]
        for (id, product, offer) in plans {
            try await act("customer") { $0.customer = id }
            try await act("purchase") {
                $0.customer = id
                $0.product = product
                $0.offer = offer
            }
        }
        // Carol's card fails when her trial ends; Erin turns auto-renew off; Frank asks for a refund.
        try await act("paymentMethod") {
            $0.customer = "carol"
            $0.paymentMethod = "failing"
        }
        try await act("autoRenew") {
            $0.customer = "erin"
            $0.product = "basic.monthly"
            $0.enabled = false
        }
        var refund = ActionRequest("refund")
        refund.customer = "frank"
        refund.product = "pro.monthly"
        await driver.schedule(refund, at: driver.origin + 9 * Milliseconds.day)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// The simulator's virtual clock as the server's clock (`entitled dev` and tests only).
struct VirtualServerClock: ServerClock {
    let clock: AppStoreSimulator.VirtualClock
    func nowMilliseconds() -> Int64 { clock.nowMilliseconds() }
}
