import EntitledConfig
import EntitledCrypto
import EntitledServer
import Foundation
import HTTPServer
import Synchronization

/// `entitled bench http`: the server on loopback against wrk.
public enum HTTPBenchmark {
    /// What to run.
    public struct Options: Sendable {
        public var connections = 32
        public var duration = 10
        public var wrkThreads = 2
        public var accessLog = true
        public init() {}
    }

    /// Runs the benchmark, printing its figures.
    public static func run(_ options: Options) async throws -> Bool {
        let (connections, duration, wrkThreads, accessLog) = (options.connections, options.duration, options.wrkThreads, options.accessLog)

        guard let wrk = Executable.find("wrk") else {
            throw BenchmarkError("wrk is not installed (apt-get install wrk / brew install wrk)")
        }
        var configuration = Configuration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        // wrk connects from loopback with --connections sockets: no per-IP cap.
        configuration.http.perIPConnectionLimit = 0
        let application = Application(configuration: configuration, readiness: AlwaysReady())
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        print("entitled bench http: wrk -t\(wrkThreads) -c\(connections) -d\(duration)s --latency, GET /healthz, plain HTTP then HTTPS")
        var plainRate = 0.0
        // The same run measures both: the TLS cost is the difference between the two lines.
        for tls in [nil, try selfSignedCredentials()] {
            var serverConfiguration = application.serverConfiguration(accessLog: accessLog ? LogWriter(fileDescriptor: devNull) : nil)
            serverConfiguration.tls = tls
            let server = HTTPServer(configuration: serverConfiguration, router: application.router)
            try server.start()
            let url = "\(tls == nil ? "http" : "https")://127.0.0.1:\(server.port)/healthz"
            if tls == nil {
                print("  server: \(server.configuration.threads) poll threads (epoll), access log \(accessLog ? "on (/dev/null)" : "off")")
            }
            let output = try await Executable.run(wrk, ["-t\(wrkThreads)", "-c\(connections)", "-d\(duration)s", "--latency", url])
            await server.shutdown()
            guard let report = WrkReport(parsing: output) else {
                throw BenchmarkError("could not read wrk's output:\n\(output)")
            }
            if tls == nil { plainRate = report.requestsPerSecond }
            print(
                String(format: "  %@ %.0f requests/s, latency p50 %@ p90 %@ p99 %@, errors: %@",
                       tls == nil ? "plain HTTP:" : "HTTPS (TLS):", report.requestsPerSecond, report.p50, report.p90, report.p99,
                       report.errors))
        }
        let target = 50_000.0
        print(String(format: "  plain HTTP ratio to target (50,000 req/s): %.2f — %@", plainRate / target,
                     plainRate >= target ? "met" : "NOT met"))
        return true
    }
}

/// A self-signed P-256 certificate for 127.0.0.1, minted now (wrk does not verify it).
func selfSignedCredentials() throws -> TLSCredentials {
    let key = try P256PrivateKey()
    let now = Int64(Date().timeIntervalSince1970)
    let certificate = try X509Certificate.mint(
        CertificateTemplate(commonName: "127.0.0.1", notBefore: now - 60, notAfter: now + 86_400),
        subjectKey: key.publicKey, issuer: nil, issuerKey: key)
    return TLSCredentials(certificateChainPEM: certificate.pem, privateKeyPEM: try key.pkcs8PEM())
}

/// What `/readyz` answers in benchmarks that have no storage.
struct AlwaysReady: ReadinessProbe {
    func checkReady() async throws {}
}

/// The figures read from wrk's `--latency` output.
struct WrkReport {
    var requestsPerSecond: Double
    var p50: String
    var p90: String
    var p99: String
    var errors: String

    init?(parsing output: String) {
        var rps: Double?
        var percentiles: [String: String] = [:]
        var errors = "none"
        for raw in output.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), fields.count >= 2 { rps = Double(fields[1]) }
            if fields.count == 2, ["50%", "90%", "99%"].contains(String(fields[0])) {
                percentiles[String(fields[0])] = String(fields[1])
            }
            if line.hasPrefix("Socket errors:") || line.hasPrefix("Non-2xx") { errors = line }
        }
        guard let rps, let p50 = percentiles["50%"], let p90 = percentiles["90%"], let p99 = percentiles["99%"] else {
            return nil
        }
        self.requestsPerSecond = rps
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.errors = errors
    }

    /// The median of several runs' figures, each figure on its own; errors are every run's that had any.
    init(median reports: [WrkReport]) {
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return 0 }
            let middle = sorted.count / 2
            return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
        }
        func latency(_ figure: KeyPath<WrkReport, String>) -> String {
            String(format: "%.2fms", median(reports.compactMap { WrkReport.milliseconds($0[keyPath: figure]) }))
        }
        requestsPerSecond = median(reports.map(\.requestsPerSecond))
        (p50, p90, p99) = (latency(\.p50), latency(\.p90), latency(\.p99))
        let failed = reports.map(\.errors).filter { $0 != "none" }
        errors = failed.isEmpty ? "none" : failed.joined(separator: "; ")
    }
}

/// Finding and running external programs (wrk).
enum Executable {
    static func find(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        // /usr/sbin: Debian's nginx, outside a normal user's PATH.
        for directory in paths + ["/usr/local/bin", "/opt/homebrew/bin", "/usr/sbin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Starts `process` from a thread with no signals blocked: a child inherits its spawner's
    /// signal mask, and Swift's pool threads block SIGINT, which wrk needs to stop early.
    static func spawnWithSignalsUnblocked(_ process: Process) throws {
        final class Outcome: @unchecked Sendable { var error: (any Error)? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedProcess(process: process)
        Thread.detachNewThread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            do { try box.process.run() } catch { outcome.error = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.error { throw error }
    }

    /// Runs a program to completion and returns its standard output. When `interruptWhen` turns
    /// true (polled every 5 ms) the program gets SIGINT, which makes wrk stop and report.
    static func run(
        _ path: String, _ arguments: [String], interruptWhen: (@Sendable () -> Bool)? = nil
    ) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try spawnWithSignalsUnblocked(process)
        // Read on a thread of its own: a blocking read must not hold one of the few threads of
        // Swift's pool, which the server in this process needs.
        let output = OutputCollector()
        Thread.detachNewThread { output.finish(pipe.fileHandleForReading.readDataToEndOfFile()) }
        if let interruptWhen {
            while process.isRunning && !interruptWhen() { try await Task.sleep(for: .milliseconds(5)) }
            if process.isRunning { process.interrupt() }
        }
        while !output.isFinished { try await Task.sleep(for: .milliseconds(5)) }
        let data = output.data
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("\(path) exited with status \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A `Process` handed to the spawning thread (it is used by one thread at a time).
private struct UncheckedProcess: @unchecked Sendable {
    let process: Process
}

/// A child's output, filled by a reading thread.
private final class OutputCollector: Sendable {
    private let state = Mutex<(done: Bool, data: Data)>((false, Data()))
    func finish(_ data: Data) { state.withLock { $0 = (true, data) } }
    var isFinished: Bool { state.withLock { $0.done } }
    var data: Data { state.withLock { $0.data } }
}
