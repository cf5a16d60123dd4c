import AppStore
import EntitledConfig
import Foundation
import HTTPServer
import Storage
import Synchronization

/// The server's own log lines (start, stop, storage events): one JSON object per line on
/// standard output, beside the access log.
public enum ServerLog {
    /// Writes `{"time":…,"type":"server","event":…, fields…}` (fields sorted by key) and flushes.
    public static func event(_ event: String, _ fields: [String: String]) {
        var line = JSONLine()
        line.add("time", ISO8601.format(Date()))
        line.add("type", "server")
        line.add("event", event)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { line.add(key, value) }
        LogWriter.standardOutput.write(line: line.finish())
        LogWriter.standardOutput.flush()
    }
}

/// Runs the server `configuration` describes on the system clock until SIGTERM or SIGINT
/// (`entitled serve`), then stops accepting connections, finishes in-flight requests (bounded by
/// `http.shutdownGraceSeconds`) and closes storage.
/// `fastPaths` is the switch the caller read from `ENTITLED_FAST_PATHS`.
/// - Throws: ``StartupError`` when the server cannot start.
public func runServer(configuration: Configuration, fastPaths: FastPaths = FastPaths()) async throws(StartupError) {
    let clock = SystemClock()
    let assembled = try await buildApplication(configuration: configuration, clock: clock, fastPaths: fastPaths)
    let store = assembled.store
    let server = HTTPServer(
        configuration: assembled.application.serverConfiguration(), router: assembled.application.router)
    let signals = TerminationSignals()
    do {
        try server.start()
    } catch {
        await store.close()
        throw .runtime(error.description)
    }
    ServerLog.event(
        "listening", ["address": "\(configuration.listen.host):\(server.port)", "database": redactedDatabase(configuration.database)])
    StartupHint.print(for: configuration, address: "\(configuration.listen.host):\(server.port)")
    let purge = RejectedPurge(store: store, clock: clock, retentionDays: configuration.storage.rejectedRetentionDays)
    let purging = Task {
        await purge.run(every: .seconds(3600)) { result in
            switch result {
            case .success(let count) where count > 0: ServerLog.event("rejected messages purged", ["count": "\(count)"])
            case .success: break
            case .failure(let error): ServerLog.event("rejected messages purge failed", ["error": "\(error)"])
            }
        }
    }

    let signal = await signals.wait()
    ServerLog.event("shutting down", ["signal": signal])
    purging.cancel()
    // Answers requests still waiting on storage 503 after the grace period (no abort).
    await server.shutdown()
    if !(await close(store, within: .seconds(configuration.http.shutdownGraceSeconds))) {
        // A frozen database keeps a storage thread in a call that may never return; every
        // request has been answered, and nothing unacknowledged is lost by exiting.
        ServerLog.event("storage did not close in time", [:])
    }
    ServerLog.event("stopped", [:])
}

/// Closes `store`, waiting at most `limit`; false when it did not finish in time.
///
/// Whichever ends first, the close or the timer, answers; the other finds the answer given.
/// `store.close()` cannot be cancelled, so it is left running past a timeout.
func close(_ store: any LedgerStore, within limit: Duration) async -> Bool {
    await withCheckedContinuation { continuation in
        let answer = FirstAnswer(continuation)
        let timer = Task {
            try? await Task.sleep(for: limit)
            answer.give(false)
        }
        Task {
            await store.close()
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

/// The write end of the termination pipe, read by the signal handler (set before it is installed).
nonisolated(unsafe) private var terminationPipe: Int32 = -1

/// Async-signal-safe: one write(2) of the signal number.
private func terminationHandler(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(terminationPipe, &byte, 1)
}
