import AppStore
import Storage

/// Gives subscriptions stored before placeholders existed their placeholder customer
/// (``PlaceholderBackfillStore``), in chunks of ``chunk`` facts, each its own transaction: a
/// service of `entitled serve` and `entitled dev` that ends once the one pass is done.
public struct PlaceholderBackfill: Service {
    public static let chunk = 500

    let store: any LedgerStore
    let projector: Projector
    let clock: any EpochClock

    public init(store: any LedgerStore, projector: Projector, clock: any EpochClock) {
        self.store = store
        self.projector = projector
        self.clock = clock
    }

    /// Backfills until the pass is done or the task is cancelled; returns how many placeholders
    /// it created. A storage failure ends it (the next start resumes).
    @discardableResult
    public func backfill() async throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let (created, more) = try await store.backfillPlaceholders(projector: projector, now: clock.nowMilliseconds(), limit: Self.chunk)
            total += created
            if !more { break }
        }
        return total
    }

    /// ``backfill()``, its outcome logged.
    public func run() async {
        do {
            let count = try await backfill()
            if count > 0 { ServerLog.event("unlinked subscriptions given placeholders", ["subscriptions": "\(count)"]) }
        } catch {
            ServerLog.event("placeholder backfill failed", ["error": "\(error)"], level: .error)
        }
    }
}
