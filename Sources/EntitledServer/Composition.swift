import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import HTTPClient
import HTTPServer
import Storage

/// A server assembled from its configuration: the routes, the storage under them and the ledger
/// the routes write through. What `entitled serve`, `entitled dev` and the tests run.
public struct AssembledServer: Sendable {
    /// The configuration it was built from.
    public let configuration: Configuration
    /// Where the server reads "now".
    public let clock: any EpochClock
    /// Every route of the API, and the HTTP settings derived from the configuration.
    public let application: Application
    /// The open store; whoever assembled the server closes it.
    public let store: any LedgerStore
    /// The ledger the routes write through (over `store`).
    public let ledger: FactLedger
    /// The App Store Server API client of each app with `serverAPI`, by bundleId (every feature
    /// that calls Apple uses these: one token cache and one connection pool per app).
    public let serverAPIClients: [String: AppStoreServerAPIClient]
    /// One per app with `serverAPI`: reconciliation with Apple's notification history.
    public let reconcilers: [Reconciler]
    /// One per configured export (`exports`), in configuration order.
    public let exports: [ScheduledExport]
    /// One per Google Play app: the voided-purchases poll.
    public let playVoidedPolls: [PlayVoidedPoll]
    /// What stores Google Play's answers for the polls, catch-ups and imports; nil without a Play app.
    let playIngest: PlayIngest?
    /// Runs the durable jobs (backfills; one of ``services``); nil without an app with `serverAPI`.
    public var jobRunner: JobRunner? { application.jobRunner }
    /// What `/metrics` reports (``Application/metrics``).
    public var metrics: ServerMetrics { application.metrics }

    /// The background services this configuration needs, for ``ServiceRunner`` (what `serve`,
    /// `dev` and the benchmarks run beside the routes): the purge of rejected messages, the
    /// metric and placeholder backfills, each app's reconciler, the job runner, the webhook dispatcher and the
    /// release of held events, each of the last three only when configured, each scheduled export
    /// and each Play app's voided-purchases poll.
    public var services: [any Service] {
        var services: [any Service] = [
            RejectedPurge(
                store: store, clock: clock, retentionDays: configuration.storage.rejectedRetentionDays,
                offerSignatureRetentionDays: configuration.offerSigning.retentionDays),
            MetricBackfill(store: store, projector: ledger.projector),
            PlaceholderBackfill(store: store, projector: ledger.projector, clock: clock),
        ]
        services += reconcilers as [any Service]
        if let jobRunner { services.append(jobRunner) }
        if let webhooks = application.webhooks { services.append(webhooks) }
        if let releaser = application.eventReleaser { services.append(releaser) }
        services += exports as [any Service]
        services += playVoidedPolls as [any Service]
        return services
    }
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

/// The composition root: builds the verifier, opens the database (unless `store` is given), the
/// ledger, the App Store Server API clients and reconcilers, and the ``Application`` over them
/// (which builds the API and the workers that call into it).
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
///   - outbound: How the App Store Server API and webhook endpoints are called; nil: ``CurlHTTP``
///     (tests inject one).
///   - apiSleeper: Waits between the API client's retries (tests and virtual time inject one).
/// - Throws: ``StartupError``.
public func buildApplication(
    configuration: Configuration, clock: any EpochClock, store: (any LedgerStore)? = nil,
    verifier: (any NotificationVerifying)? = nil, rejectionBudget: RejectionBudget? = nil,
    fastPaths: FastPaths = FastPaths(), metrics: ServerMetrics = ServerMetrics(), outbound: (any OutboundHTTP)? = nil,
    apiSleeper: any Sleeper = TaskSleeper()
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
        opened = try await openDatabase(
            configuration.database, replicas: configuration.databaseReplicas, readYourWrites: configuration.databaseReadYourWrites,
            storage: configuration.storage, observer: metrics)
    }
    do {
        // One query now; the observer keeps the gauges current from here on.
        metrics.start(from: try await opened.projectionTally())
    } catch {
        // The gauges stay empty (never wrong); serving matters more than counting.
        ServerLog.event("projection counts unavailable; entitled_customers and entitled_subscriptions stay empty", ["error": "\(error)"], level: .error)
    }
    let cache = fastPaths.projectionCache()
    let ledger = FactLedger(store: opened, configuration: configuration, cache: cache, metrics: metrics)
    if let seed = configuration.paywall {
        do {
            try await seedPaywall(seed, configuration: configuration, ledger: ledger, now: clock.nowMilliseconds())
        } catch {
            if store == nil { await opened.close() }
            throw error
        }
    }
    let clients: [String: AppStoreServerAPIClient]
    do {
        clients = try buildServerAPIClients(configuration: configuration, clock: clock, outbound: outbound, sleeper: apiSleeper)
    } catch {
        if store == nil { await opened.close() }
        throw error
    }
    let playClients: [PlayClients]
    do {
        playClients = try buildPlayClients(configuration: configuration, clock: clock, outbound: outbound, sleeper: apiSleeper)
    } catch {
        if store == nil { await opened.close() }
        throw error
    }
    let application = Application(
        configuration: configuration, verifier: TimedVerifier(base: notificationVerifier, metrics: metrics), ledger: ledger,
        clock: clock, rejectionBudget: rejectionBudget, cache: cache, metrics: metrics, serverAPI: clients,
        webhookTransport: outbound, googlePlay: playClients)
    let reconcilers: [Reconciler]
    do {
        reconcilers = try buildReconcilers(configuration: configuration, clock: clock, store: opened, application: application, clients: clients)
    } catch {
        if store == nil { await opened.close() }
        throw error
    }
    let playIngest = application.ingest.flatMap { ingest in
        playClients.isEmpty ? nil : PlayIngest(ingest: ingest, clients: playClients, restoreBehavior: configuration.policy.restoreBehavior)
    }
    return AssembledServer(
        configuration: configuration, clock: clock, application: application, store: opened, ledger: ledger, serverAPIClients: clients,
        reconcilers: reconcilers,
        exports: configuration.exports.map {
            ScheduledExport(settings: $0, store: opened, projector: ledger.projector, clock: clock, outbound: outbound, metrics: metrics)
        },
        playVoidedPolls: buildPlayVoidedPolls(play: playIngest, clock: clock), playIngest: playIngest)
}

/// An App Store Server API client per app with `serverAPI`, by bundleId: calls go to Production when
/// the app accepts it (with the Sandbox fallback when it accepts Sandbox too), else to Sandbox;
/// answers are verified with the app's roots and environments.
func buildServerAPIClients(
    configuration: Configuration, clock: any EpochClock, outbound: (any OutboundHTTP)?, sleeper: any Sleeper
) throws(StartupError) -> [String: AppStoreServerAPIClient] {
    let apps = configuration.apps.filter { $0.serverAPI != nil }
    guard !apps.isEmpty else { return [:] }
    let verifiers: AppStoreVerifier
    do {
        verifiers = try AppStoreVerifier(apps: apps, clock: clock)
    } catch {
        throw .configuration("configuration: \(error.description)")
    }
    let transport = outbound ?? CurlHTTP()
    var clients: [String: AppStoreServerAPIClient] = [:]
    for app in apps {
        let settings = app.serverAPI!
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pem: settings.privateKeyPEM)
        } catch {
            throw .configuration("apps[\(app.bundleId)].serverAPI.privateKeyFile: not a P-256 private key")
        }
        let environments = [AppStoreEnvironment.production, .sandbox].filter { app.environments.contains($0.rawValue) }
        guard let primary = environments.first, let verifier = verifiers.signedDataVerifier(bundleId: app.bundleId) else { continue }
        clients[app.bundleId] = AppStoreServerAPIClient(
            credentials: ServerAPICredentials(bundleId: app.bundleId, keyId: settings.keyId, issuerId: settings.issuerId, privateKey: key),
            settings: .init(
                environment: primary, sandboxFallback: environments.count == 2, hosts: settings.legacyHosts ? .legacy : .current,
                baseURL: settings.baseURL),
            verifier: verifier, transport: transport, clock: clock, sleeper: sleeper)
    }
    return clients
}

/// A ``Reconciler`` per app with a Server API client, in configuration order, reading the history
/// of each of the app's environments among Production and Sandbox.
func buildReconcilers(
    configuration: Configuration, clock: any EpochClock, store: any LedgerStore, application: Application,
    clients: [String: AppStoreServerAPIClient]
) throws(StartupError) -> [Reconciler] {
    guard !clients.isEmpty, let ingest = application.ingest else { return [] }
    return configuration.apps.compactMap { app in
        guard let client = clients[app.bundleId], let settings = app.serverAPI else { return nil }
        let environments = [AppStoreEnvironment.production, .sandbox].filter { app.environments.contains($0.rawValue) }
        return Reconciler(
            bundleId: app.bundleId, environments: environments, everyMinutes: settings.reconcileEveryMinutes, client: client,
            ingest: ingest, state: store, clock: clock, metrics: application.metrics)
    }
}
