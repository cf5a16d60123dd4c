import Dispatch
import EntitledConfig
import EntitledServer
import Foundation
import HTTPServer
import Storage

/// `entitled serve`: runs the HTTP server until SIGTERM or SIGINT.
enum ServeCommand: Command {
    static let name = "serve"
    static let summary = "run the server"
    static let help = """
        Usage: entitled serve [--config FILE] [--listen HOST:PORT] [--database URL]

        Runs the Entitled HTTP server until SIGTERM or SIGINT, then stops accepting connections,
        finishes in-flight requests (bounded by http.shutdownGraceSeconds), closes storage and exits 0.

        Options:
          --config FILE       JSON configuration (env ENTITLED_CONFIG); without one, built-in defaults
          --listen HOST:PORT  address to listen on (env ENTITLED_LISTEN; default 127.0.0.1:8080)
          --database URL      sqlite:PATH or postgres://… (env ENTITLED_DATABASE;
                              default sqlite:./data/entitled.sqlite, created on first start)

        Endpoints: GET /healthz (process alive), GET /readyz (storage reachable).
        See docs/configuration.md for the file format.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try loadConfiguration(&arguments)
        try arguments.finish()

        let clock = SystemClock()
        let verifier: AppStoreVerifier
        do {
            verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock)
        } catch {
            throw UsageError("configuration: \(error.description)")
        }
        let store = try await openDatabase(configuration.database)
        let ledger = StorageLedger(store: store, policy: FactMapper.policy(for: configuration))
        let application = Application(configuration: configuration, verifier: verifier, ledger: ledger, clock: clock)
        let server = HTTPServer(configuration: application.serverConfiguration(), router: application.router)
        do {
            try server.start()
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        log(event: "listening", ["address": "\(configuration.listen.host):\(server.port)", "database": redacted(configuration.database)])

        let signal = await Signals.waitForTermination()
        log(event: "shutting down", ["signal": signal])
        await server.shutdown()
        await store.close()
        log(event: "stopped", [:])
        return ExitStatus.ok
    }

    /// Reads `--config`, `--listen` and `--database` (and their environment variables).
    static func loadConfiguration(_ arguments: inout Arguments) throws -> Configuration {
        let environment = ProcessInfo.processInfo.environment
        let path = try arguments.option("--config") ?? environment["ENTITLED_CONFIG"]
        let listen = try arguments.option("--listen")
        let database = try arguments.option("--database")
        do {
            return try ConfigurationLoader(environment: environment).load(path: path, listen: listen, database: database)
        } catch {
            throw UsageError("configuration: \(error.description)")
        }
    }

    /// Opens (creating the folder of a SQLite file) and migrates the database.
    static func openDatabase(_ url: String) async throws -> any LedgerStore {
        if url.hasPrefix("sqlite:") && url != "sqlite::memory:" {
            let path = String(url.dropFirst("sqlite:".count))
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw RuntimeError("cannot create the database folder '\(folder)'")
            }
        }
        do {
            return try await openStore(url: url)
        } catch let error as StorageError {
            throw RuntimeError("database: \(error.description)")
        }
    }

    /// A database URL without its password, for logs.
    static func redacted(_ url: String) -> String {
        guard let at = url.firstIndex(of: "@"), let scheme = url.range(of: "://") else { return url }
        let credentials = url[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    static func log(event: String, _ fields: [String: String]) {
        var line = JSONLine()
        line.add("time", ISO8601.format(Date()))
        line.add("type", "server")
        line.add("event", event)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { line.add(key, value) }
        LogWriter.standardOutput.write(line: line.finish())
        LogWriter.standardOutput.flush()
    }
}

/// Waits for SIGTERM or SIGINT.
enum Signals {
    /// Returns the name of the first termination signal received.
    static func waitForTermination() async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let once = OnceBox(continuation)
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { once.resume(name) }
                source.resume()
                once.retain(source)
            }
        }
    }

    /// Resumes a continuation once and keeps the signal sources alive.
    private final class OnceBox: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<String, Never>?
        private var sources: [any DispatchSourceSignal] = []

        init(_ continuation: CheckedContinuation<String, Never>) { self.continuation = continuation }

        func retain(_ source: any DispatchSourceSignal) {
            lock.lock()
            sources.append(source)
            lock.unlock()
        }

        func resume(_ name: String) {
            lock.lock()
            let pending = continuation
            continuation = nil
            lock.unlock()
            pending?.resume(returning: name)
        }
    }
}
