import AppStore
import EntitledServer
import Foundation

/// `entitled export-customer`: everything stored about one customer, as `GET
/// /v1/customers/{appUserId}/export` answers it.
enum ExportCustomerCommand: Command {
    static let name = "export-customer"
    static let summary = "print everything stored about one customer as JSON"
    static let help = """
        Usage: entitled export-customer APP_USER_ID [--config FILE] [--database URL]

        Prints, as one JSON document, every stored row about the customer APP_USER_ID belongs to
        (all of its ids): its ids and appAccountTokens, links, facts with their signed text,
        notifications, stored projection, promotional grants, offer signatures, consent and merge
        records: what GET /v1/customers/{appUserId}/export answers. Exit status 1 when there is no
        such customer.

        Options:
          --config FILE    the server's configuration (env ENTITLED_CONFIG), for its database
          --database URL   as for 'entitled migrate' (default: the configuration's database)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false)
        let ids = try arguments.positionals()
        guard ids.count == 1, let appUserId = ids.first else { throw UsageError("give exactly one APP_USER_ID") }
        try arguments.finish()
        guard
            let document = try await CustomerExportCommand.run(
                configuration: configuration, appUserId: appUserId, now: SystemClock().nowMilliseconds())
        else {
            FileHandle.standardError.write(Data("entitled: no customer \(appUserId)\n".utf8))
            return ExitStatus.failure
        }
        FileHandle.standardOutput.write(Data(document + [UInt8(ascii: "\n")]))
        return ExitStatus.ok
    }
}
