import AppStore
import Storage

/// Releases held answer-change events (``EventHold``) once each customer's history has settled:
/// the background loop of `serve` (and of tests, which call ``releaseDue()`` on their own clock).
///
/// Work lives in the database (``EventHoldStore``): several servers on one PostgreSQL release each
/// hold once. A pass releases every hold due on the injected clock and rings the ledger's bell (the
/// feed's long polls and the webhook dispatcher wake); between passes it sleeps ``idleWait``, so a
/// hold is released within about a second of its `release_at`.
public final class EventReleaser: Service {
    /// The longest wait between passes.
    static let idleWait: Duration = .seconds(1)
    /// Holds released per pass before the next look.
    static let batch = 200

    let store: any EventHoldStore
    let ledger: FactLedger
    let clock: any EpochClock

    public init(store: any EventHoldStore, ledger: FactLedger, clock: any EpochClock) {
        self.store = store
        self.ledger = ledger
        self.clock = clock
    }

    /// Releases every hold due now; returns how many.
    /// - Throws: a storage error (the holds stay for a later pass).
    @discardableResult
    public func releaseDue() async throws -> Int {
        var total = 0
        while true {
            let released = try await store.releaseEventHolds(projector: ledger.projector, now: clock.nowMilliseconds(), limit: Self.batch)
            total += released
            if released > 0 { ledger.events.ring() }
            if released < Self.batch { return total }
        }
    }

    /// Passes until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await releaseDue()
            } catch {
                ServerLog.event("held events could not be released", ["error": "\(error)"], level: .error)
            }
            try? await Task.sleep(for: Self.idleWait)
        }
    }
}
