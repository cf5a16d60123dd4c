import AppStore
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPClient
import HTTPServer
import Storage

/// `entitled bench console`: `GET /v1/metrics/overview` over HTTP against a SQLite ledger of
/// bulk-seeded customers with their rollups (target: under 200 ms at 1,000,000, so that the console
/// stays interactive at scale).
public enum ConsoleBenchmark {
    public struct Options: Sendable {
        public var customers = 1_000_000
        public var requests = 200
        public init() {}
    }

    static let secret = "console-bench-secret-0123456789"

    public static func run(_ options: Options) async throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bench-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await openStore(url: "sqlite:" + directory.appendingPathComponent("console.sqlite").path)
        let now = SystemClock().nowMilliseconds()
        let chunk = 100_000
        var seeded = 0
        let started = ContinuousClock.now
        while seeded < options.customers {
            let range = seeded..<min(options.customers, seeded + chunk)
            try await _StorageBenchmark.bulkLoad(store, customers: range, now: now)
            seeded = range.upperBound
        }
        let loaded = ContinuousClock.now
        try await _StorageBenchmark.bulkLoadMetrics(store, customers: 0..<options.customers, now: now)
        let done = ContinuousClock.now
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        print("seeded \(options.customers) customers in \(format(seconds(loaded - started))) s "
              + "(\(Int(Double(options.customers) / max(0.001, seconds(loaded - started))))/s), "
              + "their rollups in \(format(seconds(done - loaded))) s")

        var configuration = Configuration()
        configuration.apiKeys = [APIKey(name: "console", secret: secret, scopes: [.console])]
        let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths().projectionCache())
        let application = Application(
            configuration: configuration, verifier: try AppStoreVerifier(apps: [], clock: SystemClock()), ledger: ledger,
            clock: SystemClock())
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let server = HTTPServer(
            configuration: application.serverConfiguration(accessLog: LogWriter(fileDescriptor: devNull)), router: application.router)
        try server.start()
        defer { Task { await server.shutdown() } }
        let to = metricDay(now), from = to - 364
        func day(_ d: Int64) -> String {
            let (y, m, dd) = Time.civilFromDays(d)
            return String(format: "%04d-%02d-%02d", Int(y), Int(m), Int(dd))
        }
        let url = URL(string: "http://127.0.0.1:\(server.port)/v1/metrics/overview?from=\(day(from))&to=\(day(to))&interval=day")!
        let request = OutboundRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(secret)"])
        let client = CurlHTTP()
        var samples: [Double] = []
        var points = 0
        for index in 0..<(options.requests + 10) {
            let begin = ContinuousClock.now
            let response = try await client.send(request)
            let elapsed = seconds(ContinuousClock.now - begin) * 1000
            guard response.status == 200 else { throw BenchmarkError("overview answered \(response.status)") }
            if index == 0 {
                let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
                points = (body?["series"] as? [Any])?.count ?? 0
            }
            if index >= 10 { samples.append(elapsed) }  // the first ones warm the connection and the page cache
        }
        samples.sort()
        let p50 = samples[samples.count / 2], p99 = samples[min(samples.count - 1, samples.count * 99 / 100)]
        print("overview, 365 daily points (\(points)), \(options.customers) customers: p50 \(format(p50)) ms, p99 \(format(p99)) ms "
              + "over \(samples.count) requests (target: under 200 ms)")
        await server.shutdown()
        await store.close()
        return p99 < 200
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
