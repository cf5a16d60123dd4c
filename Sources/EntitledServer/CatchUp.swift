import AppStore
import EntitledConfig
import HTTPClient

/// What `entitled reconcile` did: Apple's reconciliation of each App Store app, then the Play
/// catch-up of each Google Play app, in configuration order.
public struct CatchUpSummary: Sendable {
    /// Each App Store app's reconciliation with Apple's notification history.
    public var appStore: [(bundleId: String, report: ReconcileReport)] = []
    /// Each Google Play app's catch-up of its stored purchase tokens.
    public var playStore: [(packageName: String, report: PlayCatchUpReport)] = []

    public init() {}

    /// Some Play token was not answered by Google (Apple's failures throw instead: they stop a
    /// pass with its watermark unmoved).
    public var failed: Bool { playStore.contains { $0.report.failed > 0 } }

    /// The printed report: `ID: report` per app, each failed Play token indented under its app.
    public var lines: [String] {
        appStore.map { "\($0.bundleId): \($0.report)" }
            + playStore.flatMap { entry in ["\(entry.packageName): \(entry.report)"] + entry.report.failures.map { "  \($0)" } }
    }
}

/// `entitled reconcile`: catches up every store the configuration names (only `app`'s, a bundleId
/// or a packageName, when given) on the system clock unless told. App Store apps with `serverAPI`
/// are reconciled with Apple's notification history in the window `since`…`until` (epoch ms);
/// Google Play apps, which have no history, have their stored purchase tokens asked about again.
/// Without `app`, Apple's apps are reconciled when one has `serverAPI` or no Play app is
/// configured (so that a configuration with neither says why), Play's whenever there are some.
/// - Throws: ``StartupError``: `.configuration` for an unknown app, an App Store app without
///   `serverAPI`, or a window given for a Play app; `.runtime` when a pass or storage fails.
public func runCatchUp(
    configuration: Configuration, app: String?, since: Int64?, until: Int64?, outbound: (any OutboundHTTP)? = nil,
    clock: any EpochClock = SystemClock()
) async throws(StartupError) -> CatchUpSummary {
    let isPlay = app.map { id in configuration.playApps.contains { $0.packageName == id } } ?? false
    if isPlay, since != nil || until != nil {
        throw .configuration("--since and --until window Apple's history; a Google Play app has none")
    }
    let apple = !isPlay && (app != nil || configuration.apps.contains { $0.serverAPI != nil } || configuration.playApps.isEmpty)
    let packages = isPlay ? [app!] : app == nil ? configuration.playApps.map(\.packageName) : []
    if apple { try checkReconcile(configuration: configuration, bundleId: app) }
    let assembled = try await buildApplication(configuration: configuration, clock: clock, outbound: outbound)
    var summary = CatchUpSummary()
    do throws(StartupError) {
        if apple { summary.appStore = try await reconcile(assembled, bundleId: app, since: since, until: until) }
        summary.playStore = try await catchUp(assembled, packageNames: packages)
    } catch {
        await assembled.store.close()
        throw error
    }
    await assembled.store.close()
    return summary
}

/// Refuses a reconciliation Apple cannot answer: an unknown app, or one (or every app) without `serverAPI`.
func checkReconcile(configuration: Configuration, bundleId: String?) throws(StartupError) {
    if let bundleId {
        guard let app = configuration.app(bundleId: bundleId) else { throw .configuration("--app: no app \(bundleId) in the configuration") }
        guard app.serverAPI != nil else { throw .configuration("--app: \(bundleId) has no serverAPI in the configuration") }
    }
    guard configuration.apps.contains(where: { $0.serverAPI != nil }) else {
        throw .configuration("configuration: no app has serverAPI (see docs/configuration.md)")
    }
}

/// One reconciliation pass for each of `assembled`'s reconcilers (only `bundleId`'s when given).
func reconcile(
    _ assembled: AssembledServer, bundleId: String?, since: Int64?, until: Int64?
) async throws(StartupError) -> [(bundleId: String, report: ReconcileReport)] {
    var reports: [(bundleId: String, report: ReconcileReport)] = []
    do throws(ReconcileError) {
        for reconciler in assembled.reconcilers where bundleId == nil || reconciler.bundleId == bundleId {
            reports.append((reconciler.bundleId, try await reconciler.runOnce(since: since, until: until)))
        }
    } catch {
        throw .runtime("reconciliation failed: \(error.description)")
    }
    return reports
}

/// The Play catch-up of each of `packageNames`.
func catchUp(
    _ assembled: AssembledServer, packageNames: [String]
) async throws(StartupError) -> [(packageName: String, report: PlayCatchUpReport)] {
    var reports: [(packageName: String, report: PlayCatchUpReport)] = []
    do throws(PlayCatchUpError) {
        for package in packageNames {
            guard let catchUp = assembled.playCatchUp(packageName: package) else { continue }
            reports.append((package, try await catchUp.run()))
        }
    } catch {
        throw .runtime("catch-up failed: \(error.description)")
    }
    return reports
}
