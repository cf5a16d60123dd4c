import Storage

/// Computes the metric rollups of customers stored before schema version 15 (issue 19), in
/// chunks of ``chunk`` customers, each its own transaction: an interrupted backfill resumes with
/// the customers still missing. Run by `entitled serve` and `entitled dev` at start.
public enum MetricBackfill {
    public static let chunk = 500

    /// Backfills until no customer is missing or the task is cancelled; returns how many it did.
    /// A storage failure ends it (the next start resumes).
    @discardableResult
    public static func run(store: any LedgerStore, projector: any Projector) async throws -> Int {
        guard let console = store as? any ConsoleStore else { return 0 }
        var total = 0
        while !Task.isCancelled {
            let done = try await console.backfillMetrics(projector: projector, limit: chunk)
            total += done
            if done < chunk { break }
        }
        return total
    }
}
