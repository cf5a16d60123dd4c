import EntitledConfig
import EntitledServer
import Foundation

/// `entitled reconcile`: one reconciliation pass with Apple's notification history.
enum ReconcileCommand: Command {
    static let name = "reconcile"
    static let summary = "catch up with what Apple's and Google's notifications may have missed"
    static let help = """
        Usage: entitled reconcile [--config FILE] [--app BUNDLE|PACKAGE] [--since ISO8601] [--until ISO8601]

        For each app with serverAPI (only BUNDLE with --app), reads Apple's notification history
        from the stored watermark minus one hour (7 days back the first time) to now, every page,
        and ingests each notification as if Apple had posted it (source 'reconcile'; ones already
        stored count as duplicates). Prints per app: pages N, notifications N, new N, duplicates N.
        The watermark advances only when the window reached back to it. Skips an app another
        process is reconciling.

        For each Google Play app (only PACKAGE with --app), which has no history to read, asks the
        Developer API again about every subscription purchase token stored (not those already
        expired) and stores each answer that changed. Prints per app: tokens N, final N,
        changed N, unchanged N, failed N, then each failed token.

        Exit status 0, 1 when Apple, Google or storage failed, 2 for bad input.

        Options:
          --config FILE     the server's configuration (env ENTITLED_CONFIG)
          --app ID          one app's bundleId or packageName (default: every app with serverAPI
                            and every Google Play app)
          --since ISO8601   Apple's window start, e.g. 2026-11-01T00:00:00Z (Apple keeps 180 days)
          --until ISO8601   Apple's window end (default: now)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        let app = try arguments.option("--app")
        let since = try arguments.option("--since", as: "an ISO 8601 date-time such as 2026-11-01T00:00:00Z", parseDate)
        let until = try arguments.option("--until", as: "an ISO 8601 date-time such as 2026-11-30T00:00:00Z", parseDate)
        try arguments.finish()
        if let since, let until, since > until { throw UsageError("--since is after --until") }
        let isPlay = app.map { id in configuration.playApps.contains { $0.packageName == id } }
        if isPlay == true, since != nil || until != nil { throw UsageError("--since and --until window Apple's history; a Google Play app has none") }
        // Apple's apps unless --app names a Play app; Play's unless it names another (or only Play apps are configured).
        if isPlay != true, app != nil || configuration.apps.contains(where: { $0.serverAPI != nil }) || configuration.playApps.isEmpty {
            let reports = try await runReconcile(configuration: configuration, bundleId: app, since: since, until: until)
            for (bundleId, report) in reports { print("\(bundleId): \(report)") }
        }
        var status = ExitStatus.ok
        if isPlay == true || (app == nil && !configuration.playApps.isEmpty) {
            for (packageName, report) in try await runPlayCatchUp(configuration: configuration, packageName: app) {
                print("\(packageName): \(report)")
                for failure in report.failures { print("  \(failure)") }
                if report.failed > 0 { status = ExitStatus.failure }
            }
        }
        return status
    }

    /// Epoch milliseconds of an ISO 8601 date-time with a zone (fractional seconds allowed).
    static func parseDate(_ text: String) -> Int64? {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = plain.date(from: text) ?? fractional.date(from: text) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
