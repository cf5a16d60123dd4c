import EntitledConfig
import EntitledServer
import Foundation

/// `entitled serve`: runs the HTTP server until SIGTERM or SIGINT.
enum ServeCommand: Command {
    static let name = "serve"
    static let summary = "run the server"
    static let help = """
        Usage: entitled serve [--config FILE] [--listen HOST:PORT] [--database URL] [--log-format F] [--log-level L]

        Runs the Entitled HTTP server until SIGTERM or SIGINT, then stops accepting connections,
        finishes in-flight requests (bounded by http.shutdownGraceSeconds), closes storage and exits 0.

        Options:
          --config FILE       JSON configuration (env ENTITLED_CONFIG); without one, built-in defaults
          --listen HOST:PORT  address to listen on (env ENTITLED_LISTEN; default 127.0.0.1:8080)
          --database URL      sqlite:PATH or postgres://… (env ENTITLED_DATABASE;
                              default sqlite:./data/entitled.sqlite, created on first start)
          --log-format F      json or text (default: text on a terminal, JSON lines otherwise)
          --log-level L       debug, info, warn or error (default info)

        SIGHUP reads the TLS certificate and key again (configuration key tls) and serves them
        without dropping connections.

        Endpoints: GET /healthz (process alive), GET /readyz (storage reachable); Apple's notifications
        arrive at POST /v1/apple/notifications; apps and backends ask GET /v1/customers/{appUserId}
        (docs/openapi.yaml).
        Console: http://HOST:PORT/console, the operator console (charts, customers, health), for a key
        with the console or admin scope (docs/operations.md#console).
        Webhooks: the events your backend receives (configuration key webhooks; docs/operations.md#webhooks).
        EntitledKit: the Swift client for your app and backend (Clients/EntitledKit; its guide in
        Clients/EntitledKit/Sources/EntitledKit/EntitledKit.docc).
        See docs/configuration.md for the file format, docs/deploy.md to run it in production.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try loadConfiguration(&arguments)
        try arguments.finish()
        try await runServer(configuration: configuration, fastPaths: fastPaths)
        return ExitStatus.ok
    }

    /// Reads `--config`, `--listen` and `--database` (and their environment variables). Commands
    /// that only need the database pass `resolvingSecrets: false`: the file's `env:` secrets are
    /// then not needed (a cron job has none of them); `resolvingServerAPIKeys` still reads the
    /// Server API keys for a command that calls Apple.
    static func loadConfiguration(
        _ arguments: inout Arguments, resolvingSecrets: Bool = true, resolvingServerAPIKeys: Bool? = nil
    ) throws -> Configuration {
        let environment = ProcessInfo.processInfo.environment
        let path = try arguments.option("--config") ?? environment["ENTITLED_CONFIG"]
        let listen = try arguments.option("--listen")
        let database = try arguments.option("--database")
        let format = try arguments.option("--log-format")
        let level = try arguments.option("--log-level")
        do {
            var configuration = try ConfigurationLoader(
                environment: environment, resolvesSecrets: resolvingSecrets, resolvesServerAPIKeys: resolvingServerAPIKeys
            ).load(
                path: path, listen: listen, database: database)
            if let format { configuration.log.format = try ConfigurationLoader.logFormat(format, path: "--log-format") }
            if let level { configuration.log.level = try ConfigurationLoader.logLevel(level, path: "--log-level") }
            return configuration
        } catch {
            throw UsageError("configuration: \(error.description)")
        }
    }
}
