import EntitledConfig
import EntitledServer
import Foundation

/// `entitled import`: links existing customers to their App Store purchases.
enum ImportCommand: Command {
    static let name = "import"
    static let summary = "link existing customers to their purchases from a file of transaction ids"
    static let help = """
        Usage: entitled import [--config FILE] --app BUNDLE FILE

        FILE has one line per customer: appUserId,transactionId (CSV, no header) or
        {"appUserId": "…", "transactionId": "…"} (JSON Lines); blank lines and lines starting with
        # are skipped. For each line, fetches the transaction's whole history from Apple's App Store
        Server API and stores it linked to the customer (source 'backfill'). Safe to run twice.
        Prints progress to stderr and a summary: lines N, imported N, transactions N, failed N,
        then each failed line. Exit status 0, 1 when some line failed, 2 for bad input.

        Options:
          --config FILE     the server's configuration (env ENTITLED_CONFIG)
          --app BUNDLE      the app's bundleId (it needs serverAPI)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        guard let app = try arguments.option("--app") else { throw UsageError("--app BUNDLE is required") }
        let files = try arguments.positionals()
        try arguments.finish()
        guard files.count == 1, let file = files.first else { throw UsageError("give exactly one FILE") }
        guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("cannot read \(file)") }
        let report = try await runImport(configuration: configuration, bundleId: app, input: Array(data)) {
            report in
            let done = report.imported + report.failed
            if done % 1000 == 0 || done == report.lines {
                FileHandle.standardError.write(Data("imported \(done)/\(report.lines)\n".utf8))
            }
        }
        print(report)
        for failure in report.failures { print(failure) }
        return report.failed == 0 ? ExitStatus.ok : ExitStatus.failure
    }
}
