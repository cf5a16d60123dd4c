import AppStore
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPClient
import HTTPServer
import Storage

/// `entitled bench console`: `GET /v1/metrics/overview` and every `GET /v1/charts/{chart}` over
/// HTTP against a SQLite ledger of bulk-seeded customers with their rollups (targets at
/// 1,000,000: the overview under 200 ms, each chart under 100 ms, so that the console stays
/// interactive at scale).
public enum ConsoleBenchmark {
    public struct Options: Sendable {
        public var customers = 1_000_000
        public var requests = 200
        /// Requests per chart and segmentation (every chart is timed unsegmented and split by storefront).
        public var chartRequests = 50
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
        let metricsDone = ContinuousClock.now
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<options.customers, now: now)
        let done = ContinuousClock.now
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        print("seeded \(options.customers) customers in \(format(seconds(loaded - started))) s "
              + "(\(Int(Double(options.customers) / max(0.001, seconds(loaded - started))))/s), "
              + "their metric rollups in \(format(seconds(metricsDone - loaded))) s, "
              + "their chart rollups in \(format(seconds(done - metricsDone))) s")

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
        let client = CurlHTTP()
        let base = "http://127.0.0.1:\(server.port)"
        let range = "from=\(day(from))&to=\(day(to))"
        let overview = try await time(client, base + "/v1/metrics/overview?\(range)&interval=day", requests: options.requests, list: "series")
        print("overview, 365 daily points (\(overview.count)), \(options.customers) customers: p50 \(format(overview.p50)) ms, "
              + "p99 \(format(overview.p99)) ms over \(options.requests) requests (target: under 200 ms)")
        var chartsMet = true
        print("charts, 365 days by day, \(options.customers) customers, \(options.chartRequests) requests each (target: p99 under 100 ms):")
        for chart in ChartID.allCases {
            for segment in [nil, "storefront"] as [String?] {
                let query = "\(range)&interval=day" + (segment.map { "&segment=\($0)" } ?? "")
                let timing = try await time(client, base + "/v1/charts/\(chart.rawValue)?\(query)", requests: options.chartRequests, list: "points")
                chartsMet = chartsMet && timing.p99 < 100
                let name = chart.rawValue + (segment.map { " by \($0)" } ?? "")
                print("  \(name.padding(toLength: 38, withPad: " ", startingAt: 0)) \(String(timing.count).leftPadded(6)) points  "
                      + "p50 \(format(timing.p50).leftPadded(7)) ms  p99 \(format(timing.p99).leftPadded(7)) ms")
            }
        }
        await server.shutdown()
        await store.close()
        return overview.p99 < 200 && chartsMet
    }

    /// GETs `url` `requests` times (after ten that warm the connection and the page cache) and
    /// returns p50 and p99 in milliseconds, with the length of the first answer's array `list`.
    static func time(_ client: CurlHTTP, _ url: String, requests: Int, list: String) async throws -> (p50: Double, p99: Double, count: Int) {
        guard let target = URL(string: url) else { throw BenchmarkError("bad URL \(url)") }
        let request = OutboundRequest(method: "GET", url: target, headers: ["Authorization": "Bearer \(secret)"])
        var samples: [Double] = []
        var count = 0
        for index in 0..<(requests + 10) {
            let begin = ContinuousClock.now
            let response = try await client.send(request)
            let elapsed = (ContinuousClock.now - begin).components
            guard response.status == 200 else { throw BenchmarkError("\(target.path) answered \(response.status)") }
            if index == 0 {
                let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
                count = (body?[list] as? [Any])?.count ?? 0
            }
            if index >= 10 { samples.append(Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15) }
        }
        samples.sort()
        return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)], count)
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
