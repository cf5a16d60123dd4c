import EntitledConfig
import EntitledServer
import Foundation

/// `entitled import`: links existing customers to their App Store or Google Play purchases.
enum ImportCommand: Command {
    static let name = "import"
    static let summary = "link existing customers to their purchases (transaction ids, Play purchase tokens, a RevenueCat export)"
    static let help = """
        Usage: entitled import [--config FILE] --app BUNDLE|PACKAGE [--from lines|revenuecat] [--store STORE] FILE

        With --from lines (the default), FILE has one line per purchase: for an App Store app
        appUserId,transactionId (CSV, no header) or {"appUserId": "…", "transactionId": "…"}
        (JSON Lines); for a Google Play app (--app PACKAGE) appUserId,productId,purchaseToken or
        {"appUserId": "…", "productId": "…", "purchaseToken": "…"}. Blank lines and lines starting
        with # are skipped.

        With --from revenuecat, FILE is RevenueCat's transaction export (Scheduled Data Exports,
        Transactions feed, CSV decompressed; comma or semicolon delimited, columns found by name):
        each original transaction of the App Store is imported once, under the customer's
        rc_last_seen_app_user_id_alias (rc_original_app_user_id when that one is anonymous), the
        other id made an alias. Rows of other stores are counted and skipped (Google Play's until
        a Google Play import exists). See docs/migrate-from-revenuecat.md.

        For each transaction, fetches its whole history from Apple's App Store Server API and stores
        it linked to the customer (source 'backfill'). For each purchase token, asks Google's
        Developer API and stores the answer as if the app had posted it for the customer (linked
        by its obfuscatedExternalAccountId when set, acknowledged). Safe to run twice. Prints progress to stderr
        and a summary: lines N, imported N, transactions N, aliases N, failed N, then each failed
        line. Exit status 0, 1 when some line failed, 2 for bad input (a file that cannot be read
        as its --from says, with the line at fault).

        Options:
          --config FILE     the server's configuration (env ENTITLED_CONFIG)
          --app ID          the App Store app's bundleId (it needs serverAPI) or the Google Play
                            app's packageName
          --from FORMAT     lines (default) or revenuecat
          --store STORE     with --from revenuecat, the export's store imported: app_store (default)
                            or mac_app_store (a Mac app with a bundle of its own)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        guard let app = try arguments.option("--app") else { throw UsageError("--app BUNDLE is required") }
        let format = try arguments.option("--from", as: "lines or revenuecat") { ["lines", "revenuecat"].contains($0) ? $0 : nil } ?? "lines"
        let store = try arguments.option("--store", as: "app_store or mac_app_store") { RevenueCatExport.appleStores.contains($0) ? $0 : nil }
        let files = try arguments.positionals()
        try arguments.finish()
        guard files.count == 1, let file = files.first else { throw UsageError("give exactly one FILE") }
        guard store == nil || format == "revenuecat" else { throw UsageError("--store goes with --from revenuecat") }
        let progress: @Sendable (CustomerImport.Report) -> Void = { report in
            let done = report.imported + report.failed
            if done % 1000 == 0 || done == report.lines {
                FileHandle.standardError.write(Data("imported \(done)/\(report.lines)\n".utf8))
            }
        }
        let report: CustomerImport.Report
        if format == "revenuecat" {
            do {
                report = try await runImport(
                    configuration: configuration, bundleId: app, revenueCatExport: file, store: store ?? "app_store",
                    onRead: { print($0) }, progress: progress)
            } catch let error as ImportInputError {
                throw UsageError("\(file): \(error)")
            }
        } else {
            guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("cannot read \(file)") }
            report = try await runImport(configuration: configuration, bundleId: app, input: Array(data), progress: progress)
        }
        print(report)
        for failure in report.failures { print(failure) }
        return report.failed == 0 ? ExitStatus.ok : ExitStatus.failure
    }
}
