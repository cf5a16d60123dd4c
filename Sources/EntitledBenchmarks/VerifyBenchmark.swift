import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation

/// `entitled bench verify`: signed-data verification throughput against the raw cost of ES256.
///
/// (a) raw OpenSSL ES256 verifications per second on one core; (b) V2 notifications fully verified
/// (the notification plus its nested transaction and renewal info: three ES256 checks) and decoded
/// per second on one core with a warm chain cache; (c) the same on all cores. The ratio
/// (b) ÷ ((a) ÷ 3) says how much of the time goes to the signature checks themselves (1.0 = all).
public enum VerifyBenchmark {
    /// What to run.
    public struct Options: Sendable {
        public var count = 2000
        public var breakdown = false
        public var rounds = 3
        public init() {}
    }

    /// Runs the benchmark, printing its figures.
    public static func run(_ options: Options) async throws -> Bool {
        let (count, breakdown, rounds) = (options.count, options.breakdown, options.rounds)

        let workload = try await Workload(count: count)
        let (notifications, verifier) = (workload.notifications, workload.verifier)
        let cores = ProcessInfo.processInfo.activeProcessorCount

        // The machine is shared. (a) and (b) run on one dedicated thread and are computed from that
        // thread's CPU time, so time spent preempted by other processes does not count against
        // either; wall-clock figures are printed next to them. Each figure is the best of a few
        // alternating rounds. (c) is wall-clock throughput over all cores.
        // The `entitled verify` path over the same notifications, one per line.
        let lines = SignedPayloadLines(verifier: verifier)
        let verifyInput = Array(notifications.joined(separator: "\n").utf8)
        let single = try await onDedicatedThread { () throws -> SingleCore in
            var best = SingleCore()
            for _ in 0..<rounds {
                try workload.measureSingleCore(into: &best)

                // (d) The verify command's path on one core: every line verified, rendered and collected.
                var start = Stopwatch()
                var rendered = 0
                guard lines.verifyLines(verifyInput, workers: 1, write: { rendered += $0.count }), rendered > 0 else {
                    throw BenchmarkError("the verify command path rejected a notification")
                }
                let command = start.lap()
                best.commandCPU = max(best.commandCPU, Double(count) / command.cpu)
                best.commandWall = max(best.commandWall, Double(count) / command.wall)
            }
            return best
        }
        let rawPerSecond = single.rawCPU
        let onePerSecond = single.oneCPU

        var allPerSecond = 0.0
        for _ in 0..<rounds {
            // (c) All cores: one task per core over an interleaved share of the notifications.
            let shared = notifications
            let allStart = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for core in 0..<cores {
                    let share = stride(from: core, to: shared.count, by: cores).map { shared[$0] }
                    group.addTask {
                        for notification in share { _ = try await verifyFully(notification, verifier: verifier) }
                    }
                }
                try await group.waitForAll()
            }
            allPerSecond = max(allPerSecond, Double(count) / seconds(since: allStart))
        }

        var commandAllPerSecond = 0.0
        for _ in 0..<rounds {
            // (e) The verify command's path on all cores, as `entitled verify` runs it.
            let allStart = ContinuousClock.now
            _ = lines.verifyLines(verifyInput, workers: cores) { _ in }
            commandAllPerSecond = max(commandAllPerSecond, Double(count) / seconds(since: allStart))
        }

        let ratio = onePerSecond / (rawPerSecond / 3)
        print("notifications: \(count) (3 ES256 signatures each), cores: \(cores), best of \(rounds) rounds")
        print("(a) and (b) per CPU-second of one dedicated thread; (c) wall clock")
        print(String(format: "(a) raw ES256 verify, 1 core:            %10.0f verifications/s  (wall clock: %.0f)", rawPerSecond, single.rawWall))
        print(String(format: "(b) notifications verified, 1 core:      %10.0f notifications/s  (wall clock: %.0f)", onePerSecond, single.oneWall))
        print(String(format: "(c) notifications verified, %2d cores:    %10.0f notifications/s", cores, allPerSecond))
        print(String(format: "ratio (b) / ((a) / 3):                   %10.3f (target >= 0.8)", ratio))
        print(String(format: "(d) entitled verify path, 1 core:        %10.0f notifications/s  (wall clock: %.0f)", single.commandCPU, single.commandWall))
        print(String(format: "(e) entitled verify path, %2d cores:      %10.0f notifications/s", cores, commandAllPerSecond))
        print(String(format: "ratio (d) / (b):                         %10.3f (target >= 0.8)", single.commandCPU / onePerSecond))
        print("X.509 chain validations during the run: \(verifier.x509ValidationCount)")
        if breakdown { try printBreakdown(notifications) }
        return true
    }

    /// Best single-core rates, per thread-CPU-second and per wall-clock second.
    struct SingleCore: Sendable {
        var rawCPU = 0.0
        var rawWall = 0.0
        var oneCPU = 0.0
        var oneWall = 0.0
        var commandCPU = 0.0
        var commandWall = 0.0
    }

    /// `count` signed V2 notifications, a verifier trusting their CA with its chain cache warm, and
    /// every signature of them with the exact input it signs (for the raw ES256 figure).
    struct Workload: Sendable {
        let notifications: [String]
        let verifier: SignedDataVerifier
        let rawInputs: [(message: [UInt8], signature: [UInt8])]
        let key: P256PublicKey

        init(count: Int) async throws {
            let ca = try TestCertificateAuthority()
            let signedDate: Int64 = 1_761_962_975_000
            notifications = try (0..<count).map { try makeNotification(index: $0, signer: ca.signer, signedDate: signedDate) }
            verifier = try SignedDataVerifier(
                configuration: .init(
                    trustedRoots: [ca.rootDER], bundleId: "com.example.bench", appAppleId: 1234, environments: [.sandbox]),
                clock: FixedClock(milliseconds: signedDate))
            rawInputs = try notifications.flatMap { notification in
                try tokens(in: notification).map { token in
                    let jws = try CompactJWS.parse(token)
                    return (jws.signingInput, jws.signature)
                }
            }
            key = try ca.leaf.p256PublicKey()
            // Warm the chain cache once; every later verification is a cache hit.
            _ = try await verifyFully(notifications[0], verifier: verifier)
        }

        /// (a) raw ES256, then (b) the notifications fully verified, on the calling thread; keeps
        /// the better rates in `best`.
        func measureSingleCore(into best: inout SingleCore) throws {
            // (a) Raw ES256: the same primitive the verifier uses, on pre-decoded inputs.
            var start = Stopwatch()
            var rawValid = 0
            for input in rawInputs where key.isValidES256Signature(raw: input.signature, for: input.message) {
                rawValid += 1
            }
            let raw = start.lap()
            guard rawValid == rawInputs.count else {
                throw BenchmarkError("raw ES256 check failed (\(rawValid)/\(rawInputs.count))")
            }
            best.rawCPU = max(best.rawCPU, Double(rawInputs.count) / raw.cpu)
            best.rawWall = max(best.rawWall, Double(rawInputs.count) / raw.wall)

            // (b) One core: the synchronous entry point does the same work as `verify` in offline mode.
            start = Stopwatch()
            for notification in notifications { _ = try verifyFullySynchronously(notification, verifier: verifier) }
            let one = start.lap()
            best.oneCPU = max(best.oneCPU, Double(notifications.count) / one.cpu)
            best.oneWall = max(best.oneWall, Double(notifications.count) / one.wall)
        }
    }

    /// (b) and (a) ÷ 3 alone, best of `rounds` on a dedicated thread, per CPU-second of that thread:
    /// notifications verified per second on one core, and that over the raw ES256 limit.
    static func perCore(count: Int, rounds: Int) async throws -> (notifications: Double, ratio: Double) {
        let workload = try await Workload(count: count)
        let best = try await onDedicatedThread { () throws -> SingleCore in
            var best = SingleCore()
            for _ in 0..<rounds { try workload.measureSingleCore(into: &best) }
            return best
        }
        return (best.oneCPU, best.oneCPU / (best.rawCPU / 3))
    }

    /// Wall-clock and this thread's CPU time since creation.
    struct Stopwatch {
        let wall = ContinuousClock.now
        let cpu = Stopwatch.threadCPUSeconds()

        static func threadCPUSeconds() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }

        mutating func lap() -> (wall: Double, cpu: Double) {
            let elapsed = ContinuousClock.now - wall
            let wallSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return (wallSeconds, max(Stopwatch.threadCPUSeconds() - cpu, 1e-9))
        }
    }

    /// Runs `body` on a new thread of its own (outside the concurrency pool, so it never hops threads).
    private static func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: Result { try body() }) }
            thread.stackSize = 8 << 20
            thread.start()
        }
        return try result.get()
    }

    /// The synchronous twin of ``verifyFully(_:verifier:)``.
    private static func verifyFullySynchronously(_ token: String, verifier: SignedDataVerifier) throws -> Int {
        let notification = try verifier.verifySynchronously(token, as: BenchNotification.self).value
        let transaction = try verifier.verifySynchronously(notification.data.signedTransactionInfo, as: BenchTransaction.self).value
        let renewal = try verifier.verifySynchronously(notification.data.signedRenewalInfo, as: BenchRenewal.self).value
        return transaction.quantity + renewal.autoRenewStatus
    }

    /// Microseconds per notification for the steps of a warm verification, each timed alone.
    private static func printBreakdown(_ notifications: [String]) throws {
        let tokens = try notifications.map { try Self.tokens(in: $0) }
        func time(_ label: String, _ body: ([String]) throws -> Void) rethrows {
            let start = ContinuousClock.now
            for triple in tokens { try body(triple) }
            let micros = seconds(since: start) * 1e6 / Double(tokens.count)
            print("  " + label.padding(toLength: 36, withPad: " ", startingAt: 0) + String(format: "%8.1f µs/notification", micros))
        }
        print("breakdown (3 tokens per notification):")
        // Public parse decodes the header every time; the verifier skips that for a header it has seen.
        try time("parse, header decoded (cold)") { for token in $0 { _ = try CompactJWS.parse(token) } }
        let parsed = try tokens.map { try $0.map { try CompactJWS.parse($0) } }
        var index = 0
        time("x5c base64 + SHA-256 (cold only)") { _ in
            for jws in parsed[index] {
                let chain = jws.certificateChain!
                _ = SHA256.hash(concatenating: [Base64.decode(chain[0])!, Base64.decode(chain[1])!])
            }
            index += 1
        }
        index = 0
        try time("JSONDecoder (3 payloads)") { _ in
            let decoder = JSONDecoder()
            let triple = parsed[index]
            _ = try decoder.decode(BenchNotification.self, from: Data(triple[0].payload))
            _ = try decoder.decode(BenchTransaction.self, from: Data(triple[1].payload))
            _ = try decoder.decode(BenchRenewal.self, from: Data(triple[2].payload))
            index += 1
        }
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The notification and its two nested tokens.
    private static func tokens(in notification: String) throws -> [String] {
        let jws = try CompactJWS.parse(notification)
        let payload = try JSONDecoder().decode(BenchNotification.self, from: Data(jws.payload))
        return [notification, payload.data.signedTransactionInfo, payload.data.signedRenewalInfo]
    }

    /// What the server does per notification: verify and decode it, then each nested signed field.
    private static func verifyFully(_ token: String, verifier: SignedDataVerifier) async throws -> Int {
        let notification = try await verifier.verify(token, as: BenchNotification.self)
        let transaction = try await verifier.verify(notification.data.signedTransactionInfo, as: BenchTransaction.self)
        let renewal = try await verifier.verify(notification.data.signedRenewalInfo, as: BenchRenewal.self)
        return transaction.quantity + renewal.autoRenewStatus
    }

    private static func makeNotification(index: Int, signer: JWSSigner, signedDate: Int64) throws -> String {
        let transaction = BenchTransaction(
            transactionId: "\(2_000_000_000 + index)", originalTransactionId: "2000000000",
            webOrderLineItemId: "\(3_000_000_000 + index)", bundleId: "com.example.bench", productId: "pro.monthly",
            subscriptionGroupIdentifier: "21000000", purchaseDate: signedDate - 1000, originalPurchaseDate: signedDate - 86_400_000,
            expiresDate: signedDate + 30 * 86_400_000, quantity: 1, type: "Auto-Renewable Subscription",
            inAppOwnershipType: "PURCHASED", signedDate: signedDate, environment: "Sandbox", transactionReason: "RENEWAL",
            storefront: "USA", storefrontId: "143441", price: 9990, currency: "USD", appTransactionId: "704000000000000000")
        let renewal = BenchRenewal(
            originalTransactionId: "2000000000", autoRenewProductId: "pro.monthly", productId: "pro.monthly",
            autoRenewStatus: 1, signedDate: signedDate, environment: "Sandbox", recentSubscriptionStartDate: signedDate - 86_400_000,
            renewalDate: signedDate + 30 * 86_400_000, renewalPrice: 9990, currency: "USD", appTransactionId: "704000000000000000")
        let notification = BenchNotification(
            notificationType: "DID_RENEW", subtype: nil, notificationUUID: UUID().uuidString.lowercased(), version: "2.0",
            signedDate: signedDate,
            data: .init(
                appAppleId: 1234, bundleId: "com.example.bench", bundleVersion: "1.0", environment: "Sandbox",
                signedTransactionInfo: try signer.sign(transaction), signedRenewalInfo: try signer.sign(renewal), status: 1))
        return try signer.sign(notification)
    }
}

// Benchmark-only payload shapes, close to the real ones in size and field count.

private struct BenchNotification: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    struct AppData: Codable {
        var appAppleId: Int64
        var bundleId: String
        var bundleVersion: String
        var environment: String
        var signedTransactionInfo: String
        var signedRenewalInfo: String
        var status: Int
    }
    var notificationType: String
    var subtype: String?
    var notificationUUID: String
    var version: String
    var signedDate: Int64
    var data: AppData

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { AppStoreEnvironment(rawValue: data.environment) }
    var verificationBundleId: String? { data.bundleId }
    var verificationAppAppleId: Int64? { data.appAppleId }
}

private struct BenchTransaction: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    var transactionId: String
    var originalTransactionId: String
    var webOrderLineItemId: String
    var bundleId: String
    var productId: String
    var subscriptionGroupIdentifier: String
    var purchaseDate: Int64
    var originalPurchaseDate: Int64
    var expiresDate: Int64
    var quantity: Int
    var type: String
    var inAppOwnershipType: String
    var signedDate: Int64
    var environment: String
    var transactionReason: String
    var storefront: String
    var storefrontId: String
    var price: Int64
    var currency: String
    var appTransactionId: String

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { AppStoreEnvironment(rawValue: environment) }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { nil }
}

private struct BenchRenewal: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    var originalTransactionId: String
    var autoRenewProductId: String
    var productId: String
    var autoRenewStatus: Int
    var signedDate: Int64
    var environment: String
    var recentSubscriptionStartDate: Int64
    var renewalDate: Int64
    var renewalPrice: Int64
    var currency: String
    var appTransactionId: String

    static var appIdentifierChecks: AppIdentifierChecks { [] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { AppStoreEnvironment(rawValue: environment) }
    var verificationBundleId: String? { nil }
    var verificationAppAppleId: Int64? { nil }
}
