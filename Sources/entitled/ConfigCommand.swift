import EntitledServer
import Foundation

/// `entitled config check`: validates a configuration as `serve` would, without serving.
enum ConfigCommand: Command {
    static let name = "config"
    static let summary = "check a configuration as 'serve' would, without binding a port"
    static let help = """
        Usage: entitled config check [--config FILE] [--listen HOST:PORT] [--database URL]

        Checks everything 'entitled serve' checks before it binds its port: the file (every
        problem at once, each naming its key), the secrets it names (env:NAME set and valid),
        TLS certificate and key, Apple root certificates, Server API keys, and that the database
        can be opened (a missing SQLite file must be creatable; an existing one or PostgreSQL is
        opened without migrating, which refuses a schema newer than this binary). Binds no port,
        creates and migrates nothing. Prints each setting with where it came from (flag,
        environment, file, default) and a warning for each value of the file the environment
        replaces.

        Exit status 0 when serve would start, 1 when the database would stop it, 2 for a problem
        in the configuration (as serve).

        Options: as for 'entitled serve'.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard arguments.first == "check" else { throw UsageError("expected 'entitled config check'") }
        arguments.dropFirst()
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        try arguments.finish()
        return finish(try await ConfigurationCheck.run(configuration: configuration))
    }
}
