import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import HTTPClient
import HTTPServer
import Storage
import Synchronization

/// The server's own log lines (start, stop, storage events, what a request did): on standard
/// output beside the access log, in its format (JSON lines, or text on a terminal) and at or
/// above its level (``configureLogs(_:)``). Never a secret or a signed payload: fields are names,
/// codes and identifiers.
public enum ServerLog {
    /// Writes `{"time":…,"level":…,"type":"server","event":…, fields…}` (fields sorted by key) and flushes.
    public static func event(_ event: String, _ fields: [String: String], level: LogLevel = .info) {
        guard var line = LogWriter.standardOutput.record(level, type: "server") else { return }
        line.add("event", event)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { line.add(key, value) }
        LogWriter.standardOutput.write(line)
        LogWriter.standardOutput.flush()
    }

    /// A line about one request: `"type":"request"`, the event, its `requestId` (as in its access
    /// line and `X-Request-Id`), then `fields` sorted by key. Not flushed (requests are many).
    public static func request(_ level: LogLevel, _ event: String, requestId: String, _ fields: [String: String] = [:]) {
        guard var line = LogWriter.standardOutput.record(level, type: "request") else { return }
        line.add("event", event)
        line.add("requestId", requestId)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { line.add(key, value) }
        LogWriter.standardOutput.write(line)
    }
}

/// Sets the format and level of standard output's and standard error's writers from the `log`
/// section (a format not given is JSON lines, or text on a terminal).
public func configureLogs(_ settings: LogSettings) {
    LogWriter.standardOutput.configure(format: settings.format, level: settings.level)
    LogWriter.standardError.configure(format: settings.format, level: settings.level)
}

/// Runs the server `configuration` describes on the system clock until SIGTERM or SIGINT
/// (`entitled serve`), then stops accepting connections, finishes in-flight requests (bounded by
/// `http.shutdownGraceSeconds`) and closes storage.
/// `fastPaths` is the switch the caller read from `ENTITLED_FAST_PATHS`.
/// - Throws: ``StartupError`` when the server cannot start.
public func runServer(configuration: Configuration, fastPaths: FastPaths = FastPaths()) async throws(StartupError) {
    configureLogs(configuration.log)
    // Before the database is created or opened: a taken port must not leave one behind.
    do {
        try HTTPServer.checkCanListen(host: configuration.listen.host, port: configuration.listen.port)
    } catch {
        throw .runtime(error.description)
    }
    for warning in configuration.sources.fileValuesReplacedByEnvironment {
        ServerLog.event("setting replaced", ["detail": warning], level: .warn)
    }
    let clock = SystemClock()
    let assembled = try await buildApplication(configuration: configuration, clock: clock, fastPaths: fastPaths)
    let store = assembled.store
    var serverConfiguration = assembled.application.serverConfiguration()
    do {
        serverConfiguration.tls = try configuration.tls?.load()
    } catch {
        await store.close()
        throw .configuration("configuration: \(error.description)")
    }
    let server = HTTPServer(configuration: serverConfiguration, router: assembled.application.router)
    let signals = TerminationSignals()
    do {
        try server.start()
    } catch {
        await store.close()
        throw .runtime(error.description)
    }
    let metricsServer: HTTPServer?
    do {
        metricsServer = try startMetricsServer(configuration, metrics: assembled.metrics)
    } catch {
        await server.shutdown()
        await store.close()
        throw .runtime("metricsListen: \(error.description)")
    }
    let hangups = HangupSignals { reloadCertificate(configuration.tls, server: server) }
    defer { withExtendedLifetime(hangups) {} }
    ServerLog.event(
        "listening",
        [
            "address": "\(configuration.listen.host):\(server.port)", "database": redactedDatabase(configuration.database),
            "scheme": configuration.tls == nil ? "http" : "https",
            "addressFrom": configuration.sources.listen.description, "databaseFrom": configuration.sources.database.description,
        ])
    StartupHint.print(for: configuration, address: "\(configuration.listen.host):\(server.port)")
    let running = ServiceRunner(assembled.services).start()

    let signal = await signals.wait()
    ServerLog.event("shutting down", ["signal": signal])
    running.cancel()
    // Feed long-polls answer now rather than hold the grace period.
    assembled.ledger.events.close()
    // Answers requests still waiting on storage 503 after the grace period (no abort).
    await server.shutdown()
    await metricsServer?.shutdown()
    if !(await running.stop(within: .seconds(configuration.http.shutdownGraceSeconds))) {
        ServerLog.event("background services did not stop in time", [:], level: .warn)
    }
    if !(await close(store, within: .seconds(configuration.http.shutdownGraceSeconds))) {
        // A frozen database keeps a storage thread in a call that may never return; every
        // request has been answered, and nothing unacknowledged is lost by exiting.
        ServerLog.event("storage did not close in time", [:], level: .warn)
    }
    ServerLog.event("stopped", [:])
}

/// The `metricsListen` server (plain HTTP, `GET /metrics` only, no credentials), started and
/// announced; nil when not configured.
func startMetricsServer(_ configuration: Configuration, metrics: ServerMetrics) throws(HTTPServer.StartError) -> HTTPServer? {
    guard let address = configuration.metricsListen else { return nil }
    var settings = HTTPServer.Configuration()
    settings.host = address.host
    settings.port = address.port
    settings.threads = 1
    settings.accessLog = nil
    let server = HTTPServer(configuration: settings, router: metricsRouter(metrics))
    try server.start()
    ServerLog.event("metrics listening", ["address": "\(address.host):\(server.port)"])
    return server
}

/// SIGHUP: reads the TLS files again and serves the new pair; when they are unreadable or
/// refused, logs why and keeps serving the old one.
func reloadCertificate(_ settings: TLSSettings?, server: HTTPServer) {
    guard let settings else {
        ServerLog.event("SIGHUP ignored", ["reason": "no tls section to reload"], level: .warn)
        return
    }
    do {
        try server.reloadTLS(try settings.load())
        ServerLog.event("tls reloaded", ["certificateFile": settings.certificateFile])
    } catch let error as ConfigurationError {
        ServerLog.event("tls reload failed", ["error": error.description, "kept": "the previous certificate"], level: .error)
    } catch {
        ServerLog.event("tls reload failed", ["error": "\(error)", "kept": "the previous certificate"], level: .error)
    }
}

/// Closes `store`, waiting at most `limit`; false when it did not finish in time.
/// `store.close()` cannot be cancelled, so it is left running past a timeout.
func close(_ store: any LedgerStore, within limit: Duration) async -> Bool {
    await finishes(within: limit) { await store.close() }
}

/// Runs `work`, waiting at most `limit` for it; false when it did not finish in time (it is then
/// left running). Whichever ends first, the work or the timer, answers; the other finds the
/// answer given.
func finishes(within limit: Duration, _ work: @escaping @Sendable () async -> Void) async -> Bool {
    await withCheckedContinuation { continuation in
        let answer = FirstAnswer(continuation)
        let timer = Task {
            try? await Task.sleep(for: limit)
            answer.give(false)
        }
        Task {
            await work()
            timer.cancel()
            answer.give(true)
        }
    }
}

/// A continuation resumed by the first of several racers, exactly once.
private final class FirstAnswer: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ value: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}

/// A database URL without its password, for logs (``DatabaseURL/redacted``; as given if it does not parse).
public func redactedDatabase(_ url: String) -> String {
    (try? DatabaseURL(parsing: url))?.redacted ?? url
}

/// Catches SIGTERM and SIGINT from the moment it is created. Create it before announcing
/// readiness: a supervisor (or a test) that signals right after the "listening" line must neither
/// kill the process with the default action nor be missed.
///
/// A plain `sigaction` handler, installed before `init` returns, writes the signal's number to a
/// pipe that a thread of its own reads (the self-pipe pattern). Dispatch signal sources were used
/// before, but they register asynchronously on Linux: a signal sent in the meantime was ignored.
public final class TerminationSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var received: String?
    private var waiter: CheckedContinuation<String, Never>?

    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            terminationPipe = ends[1]
            install(terminationHandler, for: [SIGTERM, SIGINT])
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
    public func wait() async -> String {
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

/// Calls an action on a thread of its own for every SIGHUP, from the moment it is created (the
/// self-pipe pattern, as ``TerminationSignals``). One per process.
public final class HangupSignals: Sendable {
    public init(_ action: @escaping @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        hangupPipe = ends[1]
        install(hangupHandler, for: [SIGHUP])
        let readEnd = ends[0]
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    action()
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

private func install(_ handler: @convention(c) (Int32) -> Void, for numbers: [Int32]) {
    for number in numbers {
        var action = sigaction()
        #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = handler
        #else
            action.__sigaction_u.__sa_handler = handler
        #endif
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(number, &action, nil)
    }
}

/// The write end of the hangup pipe, read by its signal handler.
nonisolated(unsafe) private var hangupPipe: Int32 = -1

private func hangupHandler(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(hangupPipe, &byte, 1)
}

/// The write end of the termination pipe, read by the signal handler (set before it is installed).
nonisolated(unsafe) private var terminationPipe: Int32 = -1

/// Async-signal-safe: one write(2) of the signal number.
private func terminationHandler(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(terminationPipe, &byte, 1)
}
