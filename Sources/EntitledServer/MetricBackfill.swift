import Storage

/// Computes the metric rollups of customers stored before the rollups existed, in chunks of
/// ``chunk`` customers, each its own transaction: an interrupted backfill resumes with the
/// customers still missing. A service of `entitled serve` and `entitled dev` that ends once done.
public struct MetricBackfill: Service {
    public static let chunk = 500

    let store: any LedgerStore
    let projector: Projector

    public init(store: any LedgerStore, projector: Projector) {
        self.store = store
        self.projector = projector
    }

    /// Backfills until no customer is missing or the task is cancelled; returns how many it did.
    /// A storage failure ends it (the next start resumes).
    @discardableResult
    public func backfill() async throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let done = try await store.backfillMetrics(projector: projector, limit: Self.chunk)
            total += done
            if done < Self.chunk { break }
        }
        return total
    }

    /// ``backfill()``, its outcome logged.
    public func run() async {
        do {
            let count = try await backfill()
            if count > 0 { ServerLog.event("metric rollups backfilled", ["customers": "\(count)"]) }
        } catch {
            ServerLog.event("metric rollup backfill failed", ["error": "\(error)"], level: .error)
        }
    }
}
