import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Storage

/// What `entitled dev` was asked for (its options, parsed by the command).
public struct DevOptions: Sendable {
    /// Where the server listens (the dashboard and the API): `HOST:PORT`, checked as the
    /// configuration's `listen`; nil takes `ENTITLED_LISTEN` from `environment`, then the default.
    public var listen: String?
    /// The environment variables the configuration may read (`entitled dev` passes `ENTITLED_LISTEN` only).
    public var environment: [String: String]
    /// Where the simulator's control API listens; nil follows the server's address
    /// (``controlAddress(following:)``), so that a second `entitled dev` on another `--listen`
    /// needs no `--control` of its own.
    public var control: ListenAddress?
    /// The folder of the database and the simulator's CA.
    public var data: String
    /// Real seconds per virtual day; 0 starts paused.
    public var dayEvery: Double
    /// Whether to buy the seeded customers' subscriptions at start (a new data folder only).
    public var seed: Bool
    /// Whether to empty the data folder first (of what `entitled dev` keeps there).
    public var reset: Bool
    /// The fast paths' switch (the command reads `ENTITLED_FAST_PATHS`).
    public var fastPaths: FastPaths
    /// Webhook endpoints (the `webhooks` section of `--webhooks FILE`): the server delivers its
    /// events to them as `serve` does.
    public var webhooks: [WebhookEndpoint]
    /// Your configuration file (`--config`): its apps, products, policy and webhooks, with dev's
    /// database, address and API key; nil runs the demo catalog.
    public var configurationFile: String?
    /// An Xcode StoreKit configuration file (`--storekit`) whose products the simulator sells.
    public var storeKit: String?
    /// The bundle id the simulator sells under (`--bundle-id`): picks the configuration's app,
    /// and names the `.storekit` file's app.
    public var bundleId: String?
    /// The virtual clock's start for a new data folder (epoch milliseconds); nil reads the wall clock.
    public var start: Int64?

    public init(
        listen: String?, environment: [String: String] = [:], control: ListenAddress? = nil, data: String, dayEvery: Double,
        seed: Bool, reset: Bool = false, fastPaths: FastPaths = FastPaths(), webhooks: [WebhookEndpoint] = [],
        configurationFile: String? = nil, storeKit: String? = nil, bundleId: String? = nil, start: Int64? = nil
    ) {
        self.configurationFile = configurationFile
        self.storeKit = storeKit
        self.bundleId = bundleId
        self.start = start
        self.webhooks = webhooks
        self.reset = reset
        self.fastPaths = fastPaths
        self.listen = listen
        self.environment = environment
        self.control = control
        self.data = data
        self.dayEvery = dayEvery
        self.seed = seed
    }
}

/// `entitled dev`: the server and the App Store simulator wired together on one virtual clock,
/// with a seeded scenario and a dashboard — the whole lifecycle on a laptop.
public enum DevEnvironment {
    /// The development API key (this mode only; printed at start).
    public static let devKey = "dev-key-entitled-local-only"

    /// Runs the server (through ``buildApplication(configuration:clock:store:verifier:rejectionBudget:fastPaths:metrics:outbound:apiSleeper:)``,
    /// on the simulator's virtual clock), the simulator and its control API until SIGTERM or SIGINT.
    /// A data folder used before is continued: the simulator's store, virtual time and ids go on
    /// from where they were saved (after every action and day, and at exit).
    public static func run(_ options: DevOptions) async throws {
        let folder = DevDataFolder(url: URL(fileURLWithPath: options.data))
        if options.reset { try folder.reset() }
        let folderExisted = FileManager.default.fileExists(atPath: folder.url.path)
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let saved = try folder.load()
        // A new folder whose start fails is removed again (what dev put there only): a database
        // without a saved state would refuse the next start.
        var started = false
        defer { if !started && saved == nil { folder.discard(removingFolder: !folderExisted) } }
        let ca = try SimulatorCA.loadOrCreate(in: folder.caFolder)
        try Data(ca.rootDER).write(to: folder.rootFile)
        let file = try options.configurationFile.map { path throws(StartupError) in try loadFile(path, options) }
        // A continued folder keeps the catalog its simulator was saved with (--reset takes a new one).
        let catalog = try saved?.simulator.catalog ?? DevCatalog.simulatorCatalog(options: options, file: file)
        let built = try Self.configuration(options, file: file, catalog: catalog, rootFile: folder.rootFile.path)
        var configuration = built.0
        let simulated = built.simulated
        let serverAPI = try DevServerAPI()
        configuration.apps[simulated].serverAPI = try serverAPI.settings()

        // The composition root: the only place `dev` reads the wall clock, to start the virtual one
        // (a continued folder starts it where it was saved).
        let clock = AppStoreSimulator.VirtualClock(
            milliseconds: saved?.simulator.now ?? options.start ?? Int64(Date().timeIntervalSince1970 * 1000))
        let play = try Self.play(options, file: file, clock: clock, folder: folder, saved: saved)
        if let play { configuration.playApps = play.apps(configuration.playApps) }
        let assembled = try await buildApplication(
            configuration: configuration, clock: clock, fastPaths: options.fastPaths, outbound: serverAPI.redirect)
        let store = assembled.store

        let driverBox = DriverBox()
        var router = assembled.application.router
        Dashboard.register(on: &router, driver: driverBox, key: devKey, listenHost: configuration.listen.host)
        let server = HTTPServer(configuration: assembled.application.serverConfiguration(accessLog: nil), router: router)
        let signals = TerminationSignals()
        do {
            try server.start()
        } catch {
            await store.close()
            throw StartupError.runtime(
                "\(error.description); is another entitled dev running? Choose another address with --listen HOST:PORT "
                    + "(or ENTITLED_LISTEN)")
        }
        let notificationsURL = URL(string: "http://\(configuration.listen.host):\(server.port)/v1/apple/notifications")!
        let simulator = Simulator(
            catalog: catalog, ca: ca, clock: clock, transport: HTTPNotificationTransport(url: notificationsURL))
        if let saved {
            do {
                try await simulator.restore(saved.simulator)
            } catch {
                await server.shutdown()
                await store.close()
                throw StartupError.configuration("\(folder.stateFile.path): \(error.message); start afresh with --reset")
            }
        }
        let dayEvery = options.dayEvery
        let driver = DevDriver(
            simulator: simulator, ledger: assembled.ledger, policy: configuration.policy,
            pace: DevDriver.Pace(running: dayEvery > 0, dayEvery: dayEvery > 0 ? max(DevDriver.minimumDayEvery, dayEvery) : 2),
            folder: folder, saved: saved, play: play)
        play?.connect(endpoint: URL(string: "http://\(configuration.listen.host):\(server.port)/v1/google/notifications")!)
        driverBox.set(driver)

        let control = options.control ?? controlAddress(following: configuration.listen)
        var controlSettings = HTTPServer.Configuration()
        controlSettings.host = control.host
        controlSettings.port = control.port
        controlSettings.accessLog = nil
        var controlRouter = ControlAPI.router(for: simulator)
        FakeServerAPI.register(simulator, keys: [try serverAPI.acceptedKey()], on: &controlRouter)
        let controlServer = HTTPServer(configuration: controlSettings, router: controlRouter)
        do {
            try controlServer.start()
        } catch {
            await server.shutdown()
            await store.close()
            throw StartupError.runtime(
                "control API: \(error.description); choose another address with --control HOST:PORT")
        }
        let controlHost = ["0.0.0.0", "::", "[::]"].contains(control.host) ? "127.0.0.1" : control.host
        let controlURL = "http://\(ListenAddress(host: controlHost, port: controlServer.port))"
        serverAPI.redirect.point(at: URL(string: controlURL)!)
        // The background services `serve` runs, on the virtual clock, once the simulator's Server
        // API answers (backfills and reconciliation call it) and before the seeding, whose events
        // the dispatcher then delivers.
        let running = ServiceRunner(assembled.services).start()

        if !isLoopback(configuration.listen.host) {
            ServerLog.event(
                "warning",
                ["detail": "entitled dev listens beyond loopback: anyone who can reach it can drive the simulator with the printed key"])
        }
        // The seeded scenario buys the demo catalog's products.
        if options.seed && saved == nil && options.configurationFile == nil && options.storeKit == nil {
            do {
                try await seedScenario(driver: driver)
            } catch {
                ServerLog.event("seeded scenario failed", ["error": "\(error)"])
            }
        }
        await driver.sample()
        // Saved at once, so that even a killed process continues this folder's clock and ids.
        await driver.save()
        started = true
        // Announced once seeded, so that whoever opens the dashboard on this line sees customers.
        let serverURL = "http://\(ListenAddress(host: configuration.listen.host, port: server.port))"
        ServerLog.event(
            "listening",
            [
                "address": "\(configuration.listen.host):\(server.port)",
                "control": "\(ListenAddress(host: control.host, port: controlServer.port))", "database": configuration.database,
                "apiKey": devKey, "dashboard": "\(serverURL)/", "console": "\(serverURL)/console",
            ])
        // The same as plain lines, for a person reading the terminal.
        for line in announcement(server: serverURL, control: controlURL, folder: folder.url.path, continued: saved != nil) {
            LogWriter.standardOutput.write(line: line)
        }
        LogWriter.standardOutput.flush()
        let ticker = Task { await driver.autoAdvance() }

        let signal = await signals.wait()
        ServerLog.event("shutting down", ["signal": signal])
        ticker.cancel()
        await running.stop()
        await driver.save()
        await controlServer.shutdown()
        await server.shutdown()
        await play?.shutdown()
        await store.close()
        ServerLog.event("stopped", [:])
    }

    /// The fake Google Play selling your configuration's first Play app, else the demo Play app; nil
    /// when your configuration has App Store apps only.
    static func play(_ options: DevOptions, file: Configuration?, clock: any EpochClock, folder: DevDataFolder, saved: DevState?)
        throws(StartupError) -> DevPlay?
    {
        guard file == nil || file?.playApps.isEmpty == false else { return nil }
        return try DevPlay(configured: file?.playApps.first, clock: clock, keyFile: folder.playKeyFile, saved: saved?.play)
    }

    /// Your configuration file, with dev's address and database.
    static func loadFile(_ path: String, _ options: DevOptions) throws(StartupError) -> Configuration {
        do {
            return try ConfigurationLoader(environment: options.environment).load(
                path: path, listen: options.listen, database: database(options))
        } catch {
            throw .configuration("\(path): \(error.description)")
        }
    }

    static func database(_ options: DevOptions) -> String { "sqlite:\(URL(fileURLWithPath: options.data).path)/entitled.sqlite" }

    /// The server's configuration in this mode: `file` (your configuration, or the defaults) with
    /// SQLite in the data folder and the development key; its apps accept the local environments,
    /// and the catalog's app (index `simulated`, added when `file` has none) trusts the simulator's root.
    static func configuration(_ options: DevOptions, file: Configuration?, catalog: Catalog, rootFile: String)
        throws(StartupError) -> (Configuration, simulated: Int)
    {
        var configuration: Configuration
        if let file {
            configuration = file
        } else {
            do {
                configuration = try ConfigurationLoader(environment: options.environment).load(
                    path: nil, listen: options.listen, database: database(options))
            } catch {
                throw .configuration("configuration: \(error.description)")
            }
        }
        configuration.apiKeys = [APIKey(name: "dev", secret: devKey, scopes: [.read, .write, .admin])]
        if !options.webhooks.isEmpty || file == nil { configuration.webhooks = options.webhooks }
        // Events at the commit: the virtual clock stands still while paused, and a hold is
        // released on it (docs/configuration.md, `events`).
        configuration.events.settleSeconds = 0
        let (apps, simulated) = DevCatalog.apps(file?.apps ?? [], catalog: catalog, rootFile: rootFile)
        configuration.apps = apps
        return (configuration, simulated)
    }

    /// The entitlements of the demo catalog's products, named as examples/entitled.json names
    /// them: the pro plans and the lifetime unlock grant `pro`, the basic plan `basic`.
    static let demoEntitlements: [String: [String]] = [
        "pro.monthly": ["pro"], "pro.yearly": ["pro"], "basic.monthly": ["basic"], "lifetime": ["pro"],
    ]

    /// The server's product for a simulator product: the demo catalog's entitlements
    /// (``demoEntitlements``); another product grants its group's name (a subscription) or its own id.
    static func product(from simulated: SimulatedProduct) -> Product {
        let entitlements = demoEntitlements[simulated.id] ?? [simulated.group ?? simulated.id]
        switch simulated.kind {
        case .autoRenewable:
            return Product(
                productId: simulated.id, type: .autoRenewable, subscriptionGroup: simulated.group, level: simulated.level,
                entitlements: entitlements)
        case .nonConsumable:
            return Product(productId: simulated.id, type: .nonConsumable, entitlements: entitlements)
        case .consumable:
            return Product(productId: simulated.id, type: .consumable)
        case .nonRenewing:
            return Product(
                productId: simulated.id, type: .nonRenewing, duration: simulated.period?.description ?? "P1M",
                entitlements: entitlements)
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
        // Gina subscribes on Google Play: the same answer, events and console as the App Store's customers.
        if driver.play != nil {
            _ = try await driver.act(play: DevPlay.ActionRequest(action: "buy", customer: "gina", product: "pro.monthly"))
        }
        var refund = ActionRequest("refund")
        refund.customer = "frank"
        refund.product = "pro.monthly"
        await driver.schedule(refund, at: driver.origin + 9 * Milliseconds.day)
    }

    /// What `entitled dev` tells a person at start, one plain line each: where to look, the key,
    /// and where the next steps (webhooks, the app's client) are described.
    static func announcement(server: String, control: String, folder: String, continued: Bool) -> [String] {
        [
            "Dashboard: \(server)/",
            "Console:   \(server)/console (the operator console; log in with the API key)",
            "API key:   \(devKey)",
            "Control:   \(control)/ (the simulator's control API, docs/simulator.md)",
            continued
                ? "Data:      \(folder) (continued from where it stopped; --reset starts afresh)"
                : "Data:      \(folder)",
            "Webhooks:  --webhooks FILE delivers the server's events to your endpoint (docs/operations.md#webhooks)",
            "Your app:  EntitledKit, the Swift client (Clients/EntitledKit/Sources/EntitledKit/EntitledKit.docc/GettingStarted.md)",
        ]
    }

    /// The control API's address when `--control` is not given: the server's port + 1, on the
    /// server's host when that is a loopback address and on 127.0.0.1 otherwise (the control API
    /// takes no key, so it never follows the server beyond loopback). A server on port 0 (or
    /// 65535) gets a control API on any free port, printed at start.
    public static func controlAddress(following listen: ListenAddress) -> ListenAddress {
        let host = isLoopback(listen.host) ? listen.host : "127.0.0.1"
        return ListenAddress(host: host, port: listen.port == 0 || listen.port == 65535 ? 0 : listen.port + 1)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
