import EntitledConfig
import EntitledDev
import Foundation

/// `entitled dev`: parses its options; ``DevEnvironment`` (in `EntitledDev`) runs it.
enum DevCommand: Command {
    static let name = "dev"
    static let summary = "server + App Store simulator on a virtual clock, seeded, with a dashboard"
    static let help = """
        Usage: entitled dev [--listen HOST:PORT] [--control HOST:PORT] [--data DIR] [--day-every SECONDS]
                            [--no-seed] [--reset] [--webhooks FILE] [--config FILE]
                            [--storekit FILE] [--bundle-id ID] [--start EPOCH_MS]

        Runs the server (SQLite in DIR/entitled.sqlite) and the App Store simulator (its CA in
        DIR/simulator) together. The simulator signs every notification with its own CA, which the
        server trusts, and posts it to the server; the server takes "now" from the simulator's
        virtual clock (only in this mode). A seeded scenario buys subscriptions for a few customers
        and the virtual clock advances one day every --day-every seconds, so renewals, a billing
        failure, a refund and expiries happen while you watch.

        Open http://HOST:PORT/ for the dashboard: live counts and charts over virtual time, each
        customer's timeline, and controls (buy, cancel auto-renew, fail or fix the card, refund,
        add a customer, advance a day or a month, pause, speed). Its JSON is under /dev/ (see
        docs/simulator.md), served by this command only, with the API key printed at start. The same
        key logs in to the operator console at http://HOST:PORT/console; --webhooks delivers the
        server's events (docs/operations.md#webhooks); EntitledKit is the client for your app
        (Clients/EntitledKit/Sources/EntitledKit/EntitledKit.docc).

        DIR is continued on a restart: the simulator's customers, subscriptions, virtual clock and
        transaction ids go on from where they stopped (saved in DIR/dev-state.json after every
        action and day, and at exit). --reset starts from an empty DIR instead.

        Your own products (docs/test-your-app.md): --config runs your configuration's apps, products,
        entitlements and policy (with dev's database, address and key), --storekit sells your Xcode
        StoreKit configuration file's products; neither is seeded. Every app accepts and grants
        Sandbox and Xcode transactions, so an app in the iOS Simulator with StoreKit testing can post
        its purchases (POST /v1/customers/{id}/transactions). A continued DIR keeps the catalog it was
        started with (--reset to change it).

        Options:
          --listen HOST:PORT   the server (env ENTITLED_LISTEN; default 127.0.0.1:8080; the dashboard
                               answers loopback names only unless HOST is 0.0.0.0 or ::)
          --control HOST:PORT  the simulator's control API (see docs/simulator.md; default: --listen's port + 1,
                               on its host when that is loopback, else on 127.0.0.1: 127.0.0.1:8081 by default)
          --data DIR           where the database and the simulator's CA live (default ./data/dev)
          --day-every SECONDS  real seconds per virtual day (default 2, at least 0.05; 0 starts paused)
          --no-seed            start without the seeded customers (a continued DIR is never seeded again)
          --reset              remove what dev keeps in DIR (database, simulator CA and state) first
          --webhooks FILE      a configuration file whose "webhooks" section (docs/configuration.md;
                               secrets as env:NAME) dev delivers its events to, as serve does
          --config FILE        your configuration file (docs/configuration.md): its apps and their
                               products and entitlements; the simulator sells the first app's
                               products (or --bundle-id's), free and monthly, unless --storekit
          --storekit FILE      an Xcode .storekit file: the simulator sells its products and prices;
                               products your --config does not list grant their group's name or id
          --bundle-id ID       the app the simulator sells for (default: --config's first app, else
                               com.example.app)
          --start EPOCH_MS     the virtual clock's start for a new DIR (default: the wall clock)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        // The address as `serve` takes it: --listen, then ENTITLED_LISTEN, then the default. The other
        // ENTITLED_* settings are serve's (dev owns its database and configuration).
        // With --config, its secrets may name any environment variable (env:NAME).
        let listenOnly = ProcessInfo.processInfo.environment.filter { $0.key == "ENTITLED_LISTEN" }
        let listen = try arguments.option("--listen")
        let control = try arguments.option("--control")
        let data = try arguments.option("--data") ?? "./data/dev"
        let dayEvery = try arguments.option("--day-every", as: "a number of seconds") { Double($0).flatMap { $0 >= 0 ? $0 : nil } } ?? 2
        let seed = !arguments.flag("--no-seed")
        let reset = arguments.flag("--reset")
        let webhooksFile = try arguments.option("--webhooks")
        let configurationFile = try arguments.option("--config")
        let storeKit = try arguments.option("--storekit")
        let bundleId = try arguments.option("--bundle-id")
        let start = try arguments.option("--start", as: "epoch milliseconds") { Int64($0) }
        try arguments.finish()
        var webhooks: [WebhookEndpoint] = []
        if let webhooksFile {
            // Only its `webhooks` are used; their secrets may name any environment variable.
            webhooks = try ConfigurationLoader(environment: ProcessInfo.processInfo.environment).load(path: webhooksFile).webhooks
        }
        var controlAddress: ListenAddress?
        if let control {
            guard let parsed = ListenAddress(parsing: control) else { throw UsageError("--control: '\(control)' is not HOST:PORT") }
            controlAddress = parsed
        }
        try await DevEnvironment.run(
            DevOptions(
                listen: listen, environment: configurationFile == nil ? listenOnly : ProcessInfo.processInfo.environment,
                control: controlAddress, data: data, dayEvery: dayEvery, seed: seed, reset: reset, fastPaths: fastPaths,
                webhooks: webhooks, configurationFile: configurationFile, storeKit: storeKit, bundleId: bundleId, start: start))
        return ExitStatus.ok
    }
}
