import AppStore
import EntitledConfig
import HTTPServer
import Storage

/// A server assembled from its configuration: the routes, the storage under them and the ledger
/// the routes write through. What `entitled serve`, `entitled dev` and the tests run.
public struct AssembledServer: Sendable {
    /// The configuration it was built from.
    public let configuration: Configuration
    /// Every route of the API, and the HTTP settings derived from the configuration.
    public let application: Application
    /// The open store; whoever assembled the server closes it.
    public let store: any LedgerStore
    /// The ledger the routes write through (over `store`).
    public let ledger: FactLedger
    /// What `/metrics` reports (``Application/metrics``).
    public var metrics: ServerMetrics { application.metrics }
}

/// Why a server could not be assembled: its configuration (exit status 2 in the CLI) or its
/// environment, e.g. a database that cannot be opened (exit status 1).
public enum StartupError: Error, CustomStringConvertible {
    case configuration(String)
    case runtime(String)

    public var description: String {
        switch self {
        case .configuration(let message), .runtime(let message): message
        }
    }
}

/// The composition root: builds the verifier, opens the database (unless `store` is given) and
/// wires the API over the ledger. The only place the server's parts meet.
///
/// - Parameters:
///   - configuration: The loaded configuration.
///   - clock: Where the server reads "now" (the system clock, or a virtual one in `dev` and tests).
///   - store: An open store to serve from; nil opens, migrates and checks `configuration.database`
///     (see ``openDatabase(_:storage:)``). The verifier is built first, so a bad configuration
///     stops the start before a database file is created.
///   - verifier: Replaces the App Store verifier the configuration's apps describe (tests).
///   - rejectionBudget: Replaces the default budget of rejected notifications (tests).
///   - metrics: Where the server's metrics go; a store opened here reports its commits and
///     projection changes to it (a given `store` should have been opened with it as its
///     `ledgerObserver`). Its projection gauges are set from the store's counts.
///   - fastPaths: The fast paths' switch (``FastPaths``): the verifier's codec and the projection
///     cache the ledger and the API share. Callers read it from `ENTITLED_FAST_PATHS`.
/// - Throws: ``StartupError``.
public func buildApplication(
    configuration: Configuration, clock: any EpochClock, store: (any LedgerStore)? = nil,
    verifier: (any NotificationVerifying)? = nil, rejectionBudget: RejectionBudget? = nil,
    fastPaths: FastPaths = FastPaths(), metrics: ServerMetrics = ServerMetrics()
) async throws(StartupError) -> AssembledServer {
    let notificationVerifier: any NotificationVerifying
    if let verifier {
        notificationVerifier = verifier
    } else {
        do {
            notificationVerifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: fastPaths.codec)
        } catch {
            throw .configuration("configuration: \(error.description)")
        }
    }
    let opened: any LedgerStore
    if let store {
        opened = store
    } else {
        opened = try await openDatabase(configuration.database, storage: configuration.storage, observer: metrics)
    }
    do {
        // One query now; the observer keeps the gauges current from here on.
        metrics.start(from: try await opened.projectionTally())
    } catch {
        // The gauges stay empty (never wrong); serving matters more than counting.
        ServerLog.event("projection counts unavailable; entitled_customers and entitled_subscriptions stay empty", ["error": "\(error)"], level: .error)
    }
    let cache = fastPaths.projectionCache()
    let ledger = FactLedger(
        store: opened, policy: FactMapper.policy(for: configuration), cache: cache,
        grantEnvironments: FactMapper.grantEnvironments(for: configuration), metrics: metrics)
    let application = Application(
        configuration: configuration, verifier: TimedVerifier(base: notificationVerifier, metrics: metrics), ledger: ledger,
        clock: clock, rejectionBudget: rejectionBudget, cache: cache, metrics: metrics)
    return AssembledServer(configuration: configuration, application: application, store: opened, ledger: ledger)
}
