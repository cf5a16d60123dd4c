import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledCrypto
import EntitledServer
import Entitlements
import Foundation
import HTTPClient
import HTTPServer
import Storage
import Synchronization

/// `entitled bench retention`: Apple's Get Retention Message requests over loopback HTTP at a fixed
/// rate (open loop: each request is sent at its scheduled time whether or not earlier ones were
/// answered, and its latency counts from that time), verification, the ledger read, the rules,
/// the offer signature and the record included.
public enum RetentionBenchmark {
    public struct Options: Sendable {
        /// Requests per second to send.
        public var rate = 1_000
        /// Seconds to send for.
        public var duration = 10
        /// Subscriptions in the ledger (one customer each); a tenth of the requests name unknown ones.
        public var subscriptions = 2_000
        /// Requests in flight at most; a request due while that many wait is counted late and sent when one ends.
        public var maxInFlight = 256
        public init() {}
    }

    /// The p99 the endpoint should stay under at the target rate on 2 cores.
    public static let targetP99Milliseconds = 10.0

    /// Runs the benchmark, printing its figures; false when the target was missed.
    public static func run(_ options: Options) async throws -> Bool {
        LogWriter.standardOutput.configure(format: nil, level: .warn)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bench-retention-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try TestCertificateAuthority()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        let configuration = try configuration(rootFile: rootFile.path)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let total = options.rate * options.duration
        print("entitled bench retention: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(options.rate) requests/s for \(options.duration) s")
        print("signing \(options.subscriptions) notifications and \(total) retention requests…")
        let notifications = try (0..<options.subscriptions).map { try APIBenchmark.notificationBody(index: $0, ca: ca, now: now) }
        let requests = try (0..<total).map { index in
            // One in ten names a subscription the ledger does not know (the default answers it).
            let subscription = index % 10 == 9 ? "unknown-\(index)" : "o\(index % options.subscriptions)"
            let payload = DecodedRealtimeRequestBody(
                originalTransactionId: subscription, appAppleId: 1234, productId: "pro.monthly", userLocale: "en-US",
                requestIdentifier: UUID().uuidString, environment: .production, signedDate: now)
            return Array(#"{"signedPayload":"\#(try ca.signer.sign(payload))"}"#.utf8)
        }
        let store = try await openStore(url: "sqlite:\(folder.path)/retention.sqlite", configuration: StoreConfiguration())
        defer { Task { await store.close() } }
        try await _StorageBenchmark.bulkLoad(store, customers: 0..<options.subscriptions, now: now)
        let http = CurlHTTP()
        return try await APIBenchmark.withServer(configuration: configuration, store: store, fastPaths: FastPaths()) { port in
            let notify = URL(string: "http://127.0.0.1:\(port)/v1/apple/notifications")!
            for body in notifications {
                let reply = try await http.send(OutboundRequest(method: "POST", url: notify, body: Array(body.utf8)))
                guard reply.status == 200 else { throw BenchmarkError("a notification was refused (\(reply.status))") }
            }
            let url = URL(string: "http://127.0.0.1:\(port)/v1/apple/retention")!
            // Warm-up: connections, the chain cache, the first reads.
            for body in requests.prefix(50) { _ = try await http.send(OutboundRequest(method: "POST", url: url, body: body)) }
            let result = await send(requests, to: url, rate: options.rate, maxInFlight: options.maxInFlight, http: http)
            print(result.description)
            let refused = result.answered.filter { $0.key != 200 && $0.key != 204 }.values.reduce(0, +)
            let passed =
                result.p99 < targetP99Milliseconds && result.achievedRate >= 0.95 * Double(options.rate) && result.failures == 0 && refused == 0
            print(passed ? "target met: p99 < \(Int(targetP99Milliseconds)) ms at the rate" : "target missed")
            return passed
        }
    }

    /// What a run measured.
    struct Result: CustomStringConvertible {
        var sent: Int
        var answered: [Int: Int]
        var failures: Int
        var late: Int
        var achievedRate: Double
        var p50: Double
        var p99: Double
        var p999: Double
        var max: Double

        var description: String {
            let statuses = answered.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            return String(
                format: "retention: %.0f requests/s achieved; latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms; %d sent (%@), %d failed, %d late",
                achievedRate, p50, p99, p999, max, sent, statuses, failures, late)
        }
    }

    /// Sends each request at its time (`index / rate` after the start) and measures from that time.
    static func send(_ requests: [[UInt8]], to url: URL, rate: Int, maxInFlight: Int, http: CurlHTTP) async -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let interval = Duration.seconds(1) / rate
        let tally = Tally()
        var late = 0
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for (index, body) in requests.enumerated() {
                let due = start + interval * index
                if inFlight >= maxInFlight {
                    await group.next()
                    inFlight -= 1
                }
                if clock.now > due + .milliseconds(1) { late += 1 } else { try? await clock.sleep(until: due) }
                inFlight += 1
                group.addTask {
                    do {
                        let reply = try await http.send(OutboundRequest(method: "POST", url: url, body: body, timeoutSeconds: 10))
                        let elapsed = clock.now - due
                        tally.answered(status: reply.status, body: reply.body, milliseconds: Self.milliseconds(elapsed))
                    } catch {
                        tally.failed()
                    }
                }
            }
        }
        let elapsed = clock.now - start
        let seconds = Self.milliseconds(elapsed) / 1000
        let (latencies, statuses, failures, refusal) = tally.state.withLock { ($0.latencies, $0.statuses, $0.failures, $0.firstRefusal) }
        if let refusal { print("first refusal: \(refusal)") }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Result(
            sent: requests.count, answered: statuses, failures: failures, late: late,
            achievedRate: Double(sorted.count) / seconds, p50: percentile(0.5), p99: percentile(0.99), p999: percentile(0.999),
            max: sorted.last ?? .nan)
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// What the requests in flight report.
    final class Tally: Sendable {
        struct State {
            var latencies: [Double] = []
            var statuses: [Int: Int] = [:]
            var failures = 0
            /// The body of the first answer that was neither 200 nor 204, to show why.
            var firstRefusal: String?
        }
        let state = Mutex(State())

        func answered(status: Int, body: [UInt8], milliseconds: Double) {
            state.withLock {
                $0.latencies.append(milliseconds)
                $0.statuses[status, default: 0] += 1
                if status != 200 && status != 204 && $0.firstRefusal == nil { $0.firstRefusal = String(decoding: body.prefix(300), as: UTF8.self) }
            }
        }

        func failed() { state.withLock { $0.failures += 1 } }
    }

    /// One app whose retention rules sign a promotional offer for long subscribers and show a
    /// message to the rest (every answer kind's cost is in the mix the subscriptions make).
    static func configuration(rootFile: String) throws -> Configuration {
        var configuration = Configuration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.http.perIPConnectionLimit = 0
        configuration.apiKeys = [APIKey(name: "bench", secret: APIBenchmark.benchSecret, scopes: [.read])]
        var product = Product(
            productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 2, duration: "P1M", entitlements: ["pro"])
        product.promotionalOffers = ["stay"]
        var app = App(
            bundleId: APIBenchmark.bundleId, appAppleId: 1234, environments: ["Production"], appleRootCertificates: [rootFile],
            products: [
                product,
                Product(productId: "pro.yearly", type: .autoRenewable, subscriptionGroup: "pro", level: 1, duration: "P1Y", entitlements: ["pro"]),
            ])
        app.signingKey = SigningKeySettings(
            keyId: "BENCHKEY01", issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: try P256PrivateKey().pkcs8PEM())
        app.retention = RetentionRuleSet(
            rules: [
                RetentionRule(id: "billing", when: RetentionCondition(billingIssue: true), respond: .message(messageIdentifier: UUID().uuidString)),
                RetentionRule(
                    id: "offer", when: RetentionCondition(productIds: ["pro.monthly"], storefronts: ["USA"]),
                    respond: .promotionalOffer(messageIdentifier: UUID().uuidString, offerId: "stay")),
            ],
            defaultAnswer: .message(messageIdentifier: UUID().uuidString))
        configuration.apps = [app]
        return configuration
    }
}
