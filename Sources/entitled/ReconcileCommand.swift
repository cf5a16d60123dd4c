import EntitledConfig
import EntitledServer
import Foundation

/// `entitled reconcile`: one reconciliation pass with Apple's notification history.
enum ReconcileCommand: Command {
    static let name = "reconcile"
    static let summary = "read Apple's notification history and ingest what the server missed"
    static let help = """
        Usage: entitled reconcile [--config FILE] [--app BUNDLE] [--since ISO8601] [--until ISO8601]

        For each app with serverAPI (only BUNDLE with --app), reads Apple's notification history
        from the stored watermark minus one hour (7 days back the first time) to now, every page,
        and ingests each notification as if Apple had posted it (source 'reconcile'; ones already
        stored count as duplicates). Prints per app: pages N, notifications N, new N, duplicates N.
        The watermark advances only when the window reached back to it. Skips an app another
        process is reconciling. Exit status 0, 1 when Apple or storage failed, 2 for bad input.

        Options:
          --config FILE     the server's configuration (env ENTITLED_CONFIG)
          --app BUNDLE      one app's bundleId (default: every app with serverAPI)
          --since ISO8601   window start, e.g. 2026-11-01T00:00:00Z (Apple keeps 180 days)
          --until ISO8601   window end (default: now)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        let app = try arguments.option("--app")
        let since = try arguments.option("--since", as: "an ISO 8601 date-time such as 2026-11-01T00:00:00Z", parseDate)
        let until = try arguments.option("--until", as: "an ISO 8601 date-time such as 2026-11-30T00:00:00Z", parseDate)
        try arguments.finish()
        if let since, let until, since > until { throw UsageError("--since is after --until") }
        let reports = try await runReconcile(configuration: configuration, bundleId: app, since: since, until: until)
        for (bundleId, report) in reports { print("\(bundleId): \(report)") }
        return ExitStatus.ok
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
