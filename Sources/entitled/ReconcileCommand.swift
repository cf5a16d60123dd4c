import EntitledConfig
import EntitledServer
import Foundation

/// `entitled reconcile`: parses the options; ``runCatchUp`` decides which stores are caught up.
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
        Developer API again about every purchase token stored (subscriptions not yet expired,
        one-time purchases not yet refunded in full) and stores each answer that changed. Prints per app: tokens N, final N,
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
        let summary = try await runCatchUp(configuration: configuration, app: app, since: since, until: until)
        for line in summary.lines { print(line) }
        return summary.failed ? ExitStatus.failure : ExitStatus.ok
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
