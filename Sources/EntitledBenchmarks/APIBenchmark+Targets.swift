import Entitlements
import Foundation
import Storage

/// `bench api`'s figures that come from the other benchmarks' measurements, run here so that one
/// run prints every figure its targets judge.
extension APIBenchmark {
    /// `bench verify`'s (b) and its ratio to the raw ES256 limit, on one dedicated thread.
    static func verificationPerCore() async throws -> (Double, Double) {
        let (perCore, ratio) = try await VerifyBenchmark.perCore(count: 2000, rounds: 3)
        print(
            String(
                format: "verification, 1 core: %8.0f notifications/s per CPU-second, %.2f of the raw ES256 limit on that core (target ≥ 0.8)",
                perCore, ratio))
        return (perCore, ratio)
    }

    /// Notifications `bench store`'s bytes line is measured at here: as many customers, one each,
    /// the worst case (nothing shared between a customer's notifications).
    static let bytesNotifications = 2_200

    /// The ledger's bytes on disk per notification on `url`, measured as `bench store` measures them
    /// (its ingest with 32 writers, then its breakdown by table and index).
    static func storedBytes(label: String, url: String, schema: String?) async throws -> Double {
        print("stored bytes per notification \(label) (bench store's ingest, \(bytesNotifications) notifications, one customer each):")
        let (_, bytes) = try await StoreBenchmark.ingestRate(
            url: url, schema: schema, writers: 32, notifications: bytesNotifications, projector: Projector())
        if let schema { await StoreBenchmark.dropSchema(url, schema) }
        return Double(StoreBenchmark.printBytes(bytes, notifications: bytesNotifications))
    }
}
