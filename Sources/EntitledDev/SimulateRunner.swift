import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledCrypto
import EntitledServer
import Foundation
import HTTPClient
import HTTPServer

/// What `entitled simulate` was asked for (its options, parsed by the command).
public struct SimulateOptions: Sendable {
    /// Where the simulator's catalog comes from.
    public enum CatalogSource: Sendable {
        /// The built-in demo catalog.
        case demo
        /// The simulator's own catalog JSON at this path.
        case json(path: String)
        /// An Xcode `.storekit` file at this path, for this bundle id.
        case storeKit(path: String, bundleId: String)
    }

    /// An App Store Server API key the fake Server API accepts (`--api-key`, `--key-id`, `--issuer-id`).
    public struct ServerAPIKey: Sendable {
        public var privateKeyPath: String
        public var keyId: String
        public var issuerId: String
        public init(privateKeyPath: String, keyId: String, issuerId: String) {
            self.privateKeyPath = privateKeyPath
            self.keyId = keyId
            self.issuerId = issuerId
        }
    }

    /// Load mode: `customers` subscribe and renew for `months`; every notification is posted to `url`.
    public struct Load: Sendable {
        public var customers: Int
        public var months: Int
        public var url: URL
        public var concurrency: Int
        public init(customers: Int, months: Int, url: URL, concurrency: Int) {
            self.customers = customers
            self.months = months
            self.url = url
            self.concurrency = concurrency
        }
    }

    /// Where the CA is kept.
    public var data: String
    /// Where the control API listens; nil exits after the scenario.
    public var listen: ListenAddress?
    /// Where notifications are posted; nil records them only.
    public var target: URL?
    /// The scenario file's path.
    public var scenarioPath: String?
    public var catalog: CatalogSource
    /// Overrides the catalog's bundle id.
    public var bundleId: String?
    /// Sandbox or Production.
    public var environment: AppStoreEnvironment
    /// The virtual clock's start; nil reads the wall clock once.
    public var start: Int64?
    public var renewalRate: RenewalRate?
    /// Posts V1 bodies with this shared secret instead of V2.
    public var v1SharedSecret: String?
    public var serverAPIKey: ServerAPIKey?
    public var load: Load?
    /// Trusted authorities (PEM) for an HTTPS `target` or load URL, replacing the system's (`--ca-file`).
    public var caFile: String?

    public init(
        data: String, listen: ListenAddress? = nil, target: URL? = nil, scenarioPath: String? = nil,
        catalog: CatalogSource = .demo, bundleId: String? = nil, environment: AppStoreEnvironment = .sandbox,
        start: Int64? = nil, renewalRate: RenewalRate? = nil, v1SharedSecret: String? = nil,
        serverAPIKey: ServerAPIKey? = nil, load: Load? = nil
    ) {
        self.data = data
        self.listen = listen
        self.target = target
        self.scenarioPath = scenarioPath
        self.catalog = catalog
        self.bundleId = bundleId
        self.environment = environment
        self.start = start
        self.renewalRate = renewalRate
        self.v1SharedSecret = v1SharedSecret
        self.serverAPIKey = serverAPIKey
        self.load = load
    }
}

/// `entitled simulate`: the App Store simulator on its own — a scenario, then (with a listen
/// address) the control API, the fake Server API and verifyReceipt until SIGTERM or SIGINT; or,
/// in load mode, a load run against a server.
public enum SimulateRunner {
    /// Where the runner writes: `line` for its output proper (one notification or result per
    /// line, standard output), `note` for what a person should know (standard error).
    public struct Output: Sendable {
        public var line: @Sendable (String) -> Void
        public var note: @Sendable (String) -> Void
        public init(line: @escaping @Sendable (String) -> Void, note: @escaping @Sendable (String) -> Void) {
            self.line = line
            self.note = note
        }
    }

    /// Runs what `options` describe.
    /// - Throws: ``StartupError/configuration(_:)`` for an unreadable or invalid input file,
    ///   ``StartupError/runtime(_:)`` for a scenario that fails or an address that cannot be bound.
    public static func run(_ options: SimulateOptions, output: Output) async throws {
        let catalog = try loadCatalog(options)
        var apiKeys: [AppStoreSimulator.APIKey] = []
        if let key = options.serverAPIKey {
            let pem = String(decoding: try read(key.privateKeyPath), as: UTF8.self)
            do {
                apiKeys.append(AppStoreSimulator.APIKey(keyId: key.keyId, issuerId: key.issuerId, publicKey: try P256PrivateKey(pem: pem).publicKey))
            } catch {
                throw StartupError.configuration("\(key.privateKeyPath) is not a P-256 private key in PEM")
            }
        }
        let scenario = try options.scenarioPath.map { String(decoding: try read($0), as: UTF8.self) }
        let ca = try SimulatorCA.loadOrCreate(in: URL(fileURLWithPath: options.data))
        // The wall clock is read once, to seed the virtual clock; the simulator never reads it again.
        let start = options.start ?? Int64(Date().timeIntervalSince1970) * 1000

        if let load = options.load {
            let result = try await LoadBenchmark.run(
                customers: load.customers, months: load.months, catalog: catalog, ca: ca, start: start,
                transport: HTTPNotificationTransport(url: load.url, http: CurlHTTP(caFile: options.caFile)), concurrency: load.concurrency)
            output.line(result.description)
            return
        }
        let simulator = Simulator(
            catalog: catalog, environment: options.environment, ca: ca, clock: VirtualClock(milliseconds: start),
            transport: options.target.map { ReportingTransport(HTTPNotificationTransport(url: $0, http: CurlHTTP(caFile: options.caFile)), note: output.note) },
            v1SharedSecret: options.v1SharedSecret)
        if let renewalRate = options.renewalRate {
            var request = ActionRequest("renewalRate")
            request.rate = renewalRate.rawValue
            try await simulator.perform(request)
        }
        output.note(
            "entitled simulate: trusted root at \(options.data)/ca/root.der; bundle \(catalog.bundleId); \(options.environment)")

        if let scenario {
            do {
                for notification in try await simulator.run(scenario: scenario) { output.line(line(for: notification)) }
            } catch let error as SimulatorError {
                throw StartupError.runtime("scenario: \(error.message)")
            }
        }
        guard let listen = options.listen else { return }

        var configuration = HTTPServer.Configuration()
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.accessLog = nil
        var router = ControlAPI.router(for: simulator)
        if !apiKeys.isEmpty { FakeServerAPI.register(simulator, keys: apiKeys, on: &router) }
        FakeVerifyReceipt.register(simulator, sharedSecret: options.v1SharedSecret, on: &router)
        let server = HTTPServer(configuration: configuration, router: router)
        let signals = TerminationSignals()
        do {
            try server.start()
        } catch {
            throw StartupError.runtime(
                "cannot listen on \(listen.host):\(listen.port): \(error.description); choose another with --listen HOST:PORT")
        }
        output.note("entitled simulate: control API on \(listen.host):\(server.port)")
        _ = await signals.wait()
        await server.shutdown()
    }

    /// Tells a person of every post the target did not accept: the error (a TLS failure, a refused
    /// connection) or the status, which would otherwise show only in the control API's history.
    struct ReportingTransport: NotificationTransport {
        let inner: HTTPNotificationTransport
        let note: @Sendable (String) -> Void
        init(_ inner: HTTPNotificationTransport, note: @escaping @Sendable (String) -> Void) {
            self.inner = inner
            self.note = note
        }
        func post(_ body: [UInt8]) async -> TransportOutcome {
            let outcome = await inner.post(body)
            switch outcome {
            case .failure(let message): note("entitled simulate: delivery to \(inner.url.absoluteString) failed: \(message)")
            case .status(let status) where !outcome.isSuccess:
                note("entitled simulate: delivery to \(inner.url.absoluteString) answered HTTP \(status)")
            default: break
            }
            return outcome
        }
    }

    static func loadCatalog(_ options: SimulateOptions) throws -> Catalog {
        var catalog: Catalog
        switch options.catalog {
        case .demo: catalog = .demo
        case .json(let path): catalog = try Catalog.load(json: try read(path))
        case .storeKit(let path, let bundleId): catalog = try Catalog.load(storeKit: try read(path), bundleId: bundleId)
        }
        if let bundleId = options.bundleId { catalog.bundleId = bundleId }
        return catalog
    }

    static func read(_ path: String) throws(StartupError) -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .configuration("cannot read \(path)")
        }
    }

    /// One notification as a line of JSON: type, subtype, status, customer, signed date.
    static func line(for notification: SignedNotification) -> String {
        let summary = NotificationSummary(notification)
        var fields = ["\"notificationType\":\"\(summary.notificationType ?? "")\""]
        if let subtype = summary.subtype { fields.append("\"subtype\":\"\(subtype)\"") }
        if let status = summary.status { fields.append("\"status\":\(status)") }
        if let customer = summary.customerId { fields.append("\"customer\":\"\(customer)\"") }
        fields.append("\"signedDate\":\"\(ISO8601.format(milliseconds: summary.signedDate ?? 0))\"")
        return "{" + fields.joined(separator: ",") + "}"
    }
}
