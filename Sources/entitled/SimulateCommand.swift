import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledDev
import Foundation

/// `entitled simulate`: parses its options; ``SimulateRunner`` (in `EntitledDev`) runs it.
enum SimulateCommand: Command {
    static let name = "simulate"
    static let summary = "run the App Store simulator (virtual clock, signed V2 notifications, control API)"
    static let help = """
        Usage: entitled simulate [--data DIR] [--listen HOST:PORT] [--target URL [--ca-file PEM]] [--scenario FILE]
                                 [--catalog FILE | --storekit FILE] [--bundle-id ID]
                                 [--environment Sandbox|Production] [--start EPOCH_MS]
                                 [--api-key P8FILE --key-id KID --issuer-id ISS] [--renewal-rate RATE]
                                 [--v1-shared-secret SECRET]
               entitled simulate --customers N --months M --load URL [--concurrency C] [...]

        A local App Store: customers, a catalog and a virtual clock. Every action produces the V2
        notifications Apple sends, signed with the simulator's test CA, and posts them to --target.
        Production retries failed deliveries at 1, 12, 24, 48 and 72 hours of virtual time; Sandbox
        sends once. Runs --scenario (JSON lines), then, with --listen, serves the control API until
        SIGTERM or SIGINT; without --listen it exits after the scenario. Each notification is printed
        as one line of JSON.

        Options:
          --data DIR          where the CA is kept (default ./data/simulator); configure the server
                              with DIR/ca/root.der (or root.pem) as a trusted root
          --listen HOST:PORT  serve the control API (POST /actions, POST /clock/advance, POST /scenario,
                              GET /state, GET /notifications, GET /clock, GET /ca/root.pem,
                              GET /customers/ID/receipt) and a fake verifyReceipt
                              (POST /verifyReceipt, /sandbox/verifyReceipt, /production/verifyReceipt)
          --target URL        where notifications are POSTed (default: recorded only); each
                              failed delivery is printed on standard error
          --ca-file PEM       trust these authorities (PEM) instead of the system's for an https
                              --target or --load URL, e.g. your server's private CA
          --scenario FILE     JSON lines, e.g. {"at": "P3D", "action": "purchase", "customer": "alice",
                              "product": "pro.monthly", "offer": "intro"}; see docs/simulator.md
          --catalog FILE      the simulator's catalog JSON (default: a built-in demo catalog)
          --storekit FILE     an Xcode .storekit configuration file instead (needs --bundle-id)
          --bundle-id ID      the app's bundle identifier (with --storekit; overrides the catalog's)
          --environment ENV   Sandbox (default) or Production
          --start EPOCH_MS    the virtual clock's start (default: the wall clock at startup)
          --renewal-rate RATE realTime (default), monthlyEveryFiveMinutes (the sandbox's: a month
                              renews in 5 minutes, a year in 1 hour), monthlyEveryThirtyMinutes,
                              monthlyEveryHour
          --v1-shared-secret S the app is configured for V1 notifications: post unsigned V1 bodies
                              with this shared secret as password (retries at 6, 24, 48 hours);
                              verifyReceipt also checks it
          --customers N       load mode: N customers subscribe (spread over the first day) and
          --months M          renew for M months; every notification is signed and POSTed to
          --load URL          URL with --concurrency C requests in flight (default 16); prints
                              notifications/s delivered and accepted (2xx). Sandbox, no retries.
          --api-key P8FILE    also serve a fake App Store Server API (/inApps/...) on --listen,
                              accepting ES256 tokens signed with this .p8 key (PKCS#8 PEM) with
                              header kid --key-id and claim iss --issuer-id; exp is checked
                              against the virtual clock
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let dataDirectory = try arguments.option("--data") ?? "./data/simulator"
        let listen = try arguments.option("--listen")
        let target = try arguments.option("--target")
        let scenarioPath = try arguments.option("--scenario")
        let catalogPath = try arguments.option("--catalog")
        let storeKitPath = try arguments.option("--storekit")
        let bundleIdOption = try arguments.option("--bundle-id")
        let environmentName = try arguments.option("--environment") ?? "Sandbox"
        let startOption = try arguments.option("--start", as: "epoch milliseconds") { Int64($0) }
        let renewalRate = try arguments.option("--renewal-rate", as: "a renewal rate") { RenewalRate(rawValue: $0) }
        let v1SharedSecret = try arguments.option("--v1-shared-secret")
        let loadCustomers = try arguments.option("--customers", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } }
        let loadMonths = try arguments.option("--months", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } }
        let loadURL = try arguments.option("--load")
        let concurrency = try arguments.option("--concurrency", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } }
        let apiKeyPath = try arguments.option("--api-key")
        let keyId = try arguments.option("--key-id")
        let issuerId = try arguments.option("--issuer-id")
        let caFile = try arguments.option("--ca-file")
        try arguments.finish()

        var options = SimulateOptions(data: dataDirectory, bundleId: bundleIdOption, start: startOption, renewalRate: renewalRate,
            v1SharedSecret: v1SharedSecret)
        options.scenarioPath = scenarioPath
        options.caFile = caFile
        if let apiKeyPath {
            guard let keyId, let issuerId else { throw UsageError("--api-key needs --key-id and --issuer-id") }
            guard listen != nil else { throw UsageError("--api-key needs --listen") }
            options.serverAPIKey = .init(privateKeyPath: apiKeyPath, keyId: keyId, issuerId: issuerId)
        } else if keyId != nil || issuerId != nil {
            throw UsageError("--key-id and --issuer-id go with --api-key")
        }
        options.environment = AppStoreEnvironment(rawValue: environmentName)
        guard options.environment == .sandbox || options.environment == .production else {
            throw UsageError("--environment is Sandbox or Production")
        }
        switch (catalogPath, storeKitPath) {
        case (.some, .some): throw UsageError("give --catalog or --storekit, not both")
        case (.some(let path), nil): options.catalog = .json(path: path)
        case (nil, .some(let path)):
            guard let bundleIdOption else { throw UsageError("--storekit needs --bundle-id") }
            options.catalog = .storeKit(path: path, bundleId: bundleIdOption)
        case (nil, nil): options.catalog = .demo
        }
        if let target {
            guard let url = URL(string: target), url.scheme == "http" || url.scheme == "https" else {
                throw UsageError("--target is not an http(s) URL")
            }
            options.target = url
        }
        if let listen {
            guard let address = ListenAddress(parsing: listen) else { throw UsageError("--listen is HOST:PORT") }
            options.listen = address
        }
        if loadCustomers != nil || loadMonths != nil || loadURL != nil {
            guard let loadCustomers, let loadMonths, let loadURL, let url = URL(string: loadURL),
                url.scheme == "http" || url.scheme == "https"
            else { throw UsageError("load mode needs --customers N, --months M and --load http(s)://…") }
            guard scenarioPath == nil, listen == nil else { throw UsageError("load mode takes no --scenario or --listen") }
            options.load = .init(customers: loadCustomers, months: loadMonths, url: url, concurrency: concurrency ?? 16)
        }
        try await SimulateRunner.run(options, output: .init(line: { line in
            print(line)
            // Line by line also into a file or a pipe, where stdout would otherwise wait for 4 KiB.
            fflush(nil)
        }, note: { printError($0) }))
        return ExitStatus.ok
    }
}
