import Entitlements

/// How long a customer's answer-change events are held back (the `events` configuration section).
///
/// A committed change writes a hold for the customer (table `event_holds`) in its own transaction
/// instead of events; the hold is released ``settleMilliseconds`` after the customer's last change,
/// at most ``maxHoldMilliseconds`` after the first change held. Its release replays the customer's
/// complete facts from the earliest one a held change brought, so facts arriving out of order within
/// that window give the same events — the same causes and answers too — as in order.
public struct EventHold: Sendable, Hashable {
    public var settleMilliseconds: Int64
    public var maxHoldMilliseconds: Int64

    /// The shortest and the longest wait before a hold whose release failed is tried again.
    static let minimumRetryMilliseconds: Int64 = 1_000
    static let maximumRetryMilliseconds: Int64 = 60_000
    /// How many holds a pass releases at once: each in its own transaction, submitted together so
    /// that SQLite's writer commits them in groups (one commit and one fsync for several) and
    /// PostgreSQL's pool runs them side by side; one at a time, each waited for its own commit.
    static let releasesInFlight = 16

    /// Nil for `settleSeconds` 0: events are derived at the commit.
    public init?(settleSeconds: Int, maxHoldSeconds: Int) {
        guard settleSeconds > 0 else { return nil }
        settleMilliseconds = Int64(settleSeconds) * 1000
        maxHoldMilliseconds = Int64(max(maxHoldSeconds, settleSeconds)) * 1000
    }
}

/// The release side of ``EventHold``: run by the server's background loop (several servers on one
/// PostgreSQL release each hold once: the customer's row lock, then `SKIP LOCKED` on the hold).
public protocol EventHoldStore: Sendable {
    /// Releases every hold due at `now` (at most `limit`), each in its own transaction: replays the
    /// customer's facts from the hold's earliest signed date, appends the events not in the outbox
    /// yet and deletes the hold. Returns how many holds it released; throws only when none could be
    /// released (a failing one stays held, moved back, and is tried again).
    func releaseEventHolds(projector: Projector, now: Int64, limit: Int) async throws -> Int
    /// The earliest `release_at` of any hold (nil: none held).
    func nextEventHoldRelease() async throws -> Int64?
}


extension SessionBackedStore {
    func releaseEventHolds(projector: Projector, now: Int64, limit: Int) async throws -> Int {
        let due = try await read { session in
            try session.values(
                "SELECT customer_id FROM event_holds WHERE release_at <= \(now) ORDER BY release_at, customer_id LIMIT \(Int64(min(max(limit, 1), 1000)))", as: Int64.self)
        }
        // One customer whose release fails holds up no other: its hold stays, moved back behind
        // the holds due meanwhile (else holds that keep failing would fill every pass's `limit`).
        @Sendable func release(_ customerID: Int64) async -> Result<Bool, any Error> {
            do {
                return .success(try await observedWrite { try $0.releaseHold(customerID: customerID, projector: projector, now: now) })
            } catch {
                try? await write { try Ledger(session: $0, fault: nil).postponeHold(customerID: customerID, now: now) }
                return .failure(error)
            }
        }
        let outcomes = await withTaskGroup(of: Result<Bool, any Error>.self) { group in
            var outcomes: [Result<Bool, any Error>] = []
            var submitted = 0
            while outcomes.count < due.count {
                while submitted < due.count, submitted - outcomes.count < EventHold.releasesInFlight {
                    let customerID = due[submitted]
                    submitted += 1
                    group.addTask { await release(customerID) }
                }
                guard let outcome = await group.next() else { break }
                outcomes.append(outcome)
            }
            return outcomes
        }
        let released = outcomes.count { if case .success(true) = $0 { true } else { false } }
        let failure = outcomes.lazy.compactMap { if case .failure(let error) = $0 { error } else { nil } }.first
        if let failure, released == 0 { throw failure }
        return released
    }

    func nextEventHoldRelease() async throws -> Int64? {
        try await read { try ($0.value("SELECT MIN(release_at) FROM event_holds", as: Int64?.self) ?? nil) }
    }
}

extension Ledger {
    /// Holds a customer's events back after a committed change (in the change's transaction, so
    /// none is lost): the release moves to `now` + settle, never past the first held change + the
    /// cap, and the replay starts at the earliest signed date any held change brought.
    func holdEvents(customerID: Int64, earliestSignedDate: Int64, hold: EventHold, now: Int64) throws {
        try session.query(
            """
            INSERT INTO event_holds (customer_id, earliest_signed_date, first_held_at, release_at) VALUES (\(customerID), \(earliestSignedDate), \(now), \(now + hold.settleMilliseconds))
            ON CONFLICT (customer_id) DO UPDATE SET
                earliest_signed_date = CASE WHEN excluded.earliest_signed_date < event_holds.earliest_signed_date
                    THEN excluded.earliest_signed_date ELSE event_holds.earliest_signed_date END,
                release_at = CASE WHEN event_holds.first_held_at + \(hold.maxHoldMilliseconds) < excluded.release_at
                    THEN event_holds.first_held_at + \(hold.maxHoldMilliseconds) ELSE excluded.release_at END
            """)
    }

    /// Moves the hold of a customer whose release failed back by as long as it has been held, at
    /// least ``EventHold/minimumRetryMilliseconds`` and at most ``EventHold/maximumRetryMilliseconds``:
    /// a backoff that roughly doubles with each failure, without a count to store.
    func postponeHold(customerID: Int64, now: Int64) throws {
        try session.query(
            """
            UPDATE event_holds SET release_at = \(now) + CASE
                WHEN \(now) - first_held_at < \(EventHold.minimumRetryMilliseconds) THEN \(EventHold.minimumRetryMilliseconds) WHEN \(now) - first_held_at > \(EventHold.maximumRetryMilliseconds) THEN \(EventHold.maximumRetryMilliseconds) ELSE \(now) - first_held_at END
            WHERE customer_id = \(customerID)
            """)
    }

    /// Releases one due hold (see ``EventHoldStore/releaseEventHolds(projector:now:limit:)``).
    /// The customer's row is locked first, as an ingest locks it before writing the hold: two
    /// releasers wait on it, and the second finds the hold gone.
    /// - Returns: whether a due hold was there to release.
    func releaseHold(customerID: Int64, projector: Projector, now: Int64) throws -> Bool {
        _ = try lockedCustomer(customerID)
        let skipLocked: SQLQuery = isPostgres ? " FOR UPDATE SKIP LOCKED" : ""
        guard
            let earliest = try session.value(
                "SELECT earliest_signed_date FROM event_holds WHERE customer_id = \(customerID) AND release_at <= \(now)\(skipLocked)", as: Int64.self)
        else { return false }
        try session.query("DELETE FROM event_holds WHERE customer_id = \(customerID)")
        // Gone meanwhile (erased): nothing to replay. Merged into another: its root is replayed.
        if try customer(id: customerID) != nil {
            try recompute(customerID: customerID, projector: projector, now: now, releasing: earliest)
        }
        return true
    }
}
