import Dispatch
import EntitledConfig
import EntitledServer
import Foundation
import HTTPServer
import Storage
import Synchronization

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
            verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: fastPaths.codec)
        } catch {
            throw UsageError("configuration: \(error.description)")
        }
        let store = try await openDatabase(configuration.database, storage: configuration.storage)
        let cache = fastPaths.projectionCache()
        let ledger = FactLedger(store: store, policy: FactMapper.policy(for: configuration), cache: cache)
        let application = Application(
            configuration: configuration, verifier: verifier, ledger: ledger, clock: clock, cache: cache)
        let server = HTTPServer(configuration: application.serverConfiguration(), router: application.router)
        let signals = TerminationSignals()
        do {
            try server.start()
        } catch {
            await store.close()
            throw RuntimeError(error.description)
        }
        log(event: "listening", ["address": "\(configuration.listen.host):\(server.port)", "database": redacted(configuration.database)])
        let purge = RejectedPurge(store: store, clock: clock, retentionDays: configuration.storage.rejectedRetentionDays)
        let purging = Task {
            await purge.run(every: .seconds(3600)) { result in
                switch result {
                case .success(let count) where count > 0: log(event: "rejected messages purged", ["count": "\(count)"])
                case .success: break
                case .failure(let error): log(event: "rejected messages purge failed", ["error": "\(error)"])
                }
            }
        }

        let signal = await signals.wait()
        log(event: "shutting down", ["signal": signal])
        purging.cancel()
        // Answers requests still waiting on storage 503 after the grace period (no abort).
        await server.shutdown()
        if !(await close(store, within: .seconds(configuration.http.shutdownGraceSeconds))) {
            // A frozen database keeps a storage thread in a call that may never return; every
            // request has been answered, and nothing unacknowledged is lost by exiting.
            log(event: "storage did not close in time", [:])
        }
        log(event: "stopped", [:])
        return ExitStatus.ok
    }

    /// Closes `store`, waiting at most `limit`; false when it did not finish in time.
    static func close(_ store: any LedgerStore, within limit: Duration) async -> Bool {
        let done = Mutex(false)
        Task {
            await store.close()
            done.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now.advanced(by: limit)
        while ContinuousClock.now < deadline {
            if done.withLock({ $0 }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return done.withLock { $0 }
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

    /// Opens (creating the folder of a SQLite file), migrates and quickly checks the database:
    /// a file that cannot be written or has damaged pages stops the start (exit 1).
    static func openDatabase(_ url: String, storage: StorageSettings = StorageSettings()) async throws -> any LedgerStore {
        if case .sqliteFile(let path) = try? DatabaseURL(parsing: url) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw RuntimeError("cannot create the database folder '\(folder)'")
            }
            switch SQLiteFileState(path: path) {
            case .missing: log(event: "database file created", ["path": path])
            case .empty: log(event: "database file is empty (0 bytes): treated as a new database", ["path": path])
            case .existing: break
            }
        }
        let store: any LedgerStore
        do {
            store = try await openStore(url: url, configuration: storeConfiguration(storage))
        } catch let error as StorageError {
            throw RuntimeError("database: \(error.description)")
        }
        // Bounded, so a large file does not delay the start; `entitled check` runs it to the end.
        let report: IntegrityReport
        do {
            report = try await store.checkIntegrity(full: false, timeLimit: .seconds(startupCheckSeconds))
        } catch {
            await store.close()
            throw RuntimeError("database: \(error)")
        }
        guard report.problems.isEmpty else {
            await store.close()
            throw RuntimeError(
                "database: \(redacted(url)) has damaged pages (\(report.check)): "
                    + report.problems.prefix(3).joined(separator: "; ") + "; run 'entitled check'")
        }
        if !report.complete {
            log(event: "database quick check stopped at its time limit; run 'entitled check'", ["seconds": "\(startupCheckSeconds)"])
        }
        return store
    }

    /// The time limit of the start's quick check of the database.
    static let startupCheckSeconds = 2

    /// The store options the configuration's `storage` section sets.
    static func storeConfiguration(_ storage: StorageSettings) -> StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.postgresStatementTimeoutMilliseconds = storage.statementTimeoutMilliseconds
        configuration.postgresConnectTimeoutSeconds = storage.connectTimeoutSeconds
        return configuration
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

/// Catches SIGTERM and SIGINT from the moment it is created. Create it before announcing
/// readiness: a supervisor (or a test) that signals right after the "listening" line must neither
/// kill the process with the default action nor be missed.
///
/// A plain `sigaction` handler, installed before `init` returns, writes the signal's number to a
/// pipe that a thread of its own reads (the self-pipe pattern). Dispatch signal sources were used
/// before, but they register asynchronously on Linux: a signal sent in the meantime was ignored.
final class TerminationSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var received: String?
    private var waiter: CheckedContinuation<String, Never>?

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            terminationPipe = ends[1]
            for number in [SIGTERM, SIGINT] {
                var action = sigaction()
                #if canImport(Glibc)
                    action.__sigaction_handler.sa_handler = terminationHandler
                #else
                    action.__sigaction_u.__sa_handler = terminationHandler
                #endif
                sigemptyset(&action.sa_mask)
                action.sa_flags = SA_RESTART
                sigaction(number, &action, nil)
            }
            let readEnd = ends[0]
            Thread.detachNewThread { [self] in
                var byte: UInt8 = 0
                while true {
                    let count = read(readEnd, &byte, 1)
                    if count == 1 { break }
                    if count < 0 && errno == EINTR { continue }
                    return
                }
                deliver(Int32(byte) == SIGINT ? "SIGINT" : "SIGTERM")
            }
        }
    }

    /// The name of the first termination signal received (at once if one already came).
    func wait() async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            lock.lock()
            if let received {
                lock.unlock()
                continuation.resume(returning: received)
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }

    private func deliver(_ name: String) {
        lock.lock()
        if received == nil { received = name }
        let pending = waiter
        waiter = nil
        lock.unlock()
        pending?.resume(returning: name)
    }
}

/// The write end of the termination pipe, read by the signal handler (set before it is installed).
nonisolated(unsafe) private var terminationPipe: Int32 = -1

/// Async-signal-safe: one write(2) of the signal number.
private func terminationHandler(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(terminationPipe, &byte, 1)
}
