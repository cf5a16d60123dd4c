/// Told what the ledger committed, for metrics. Calls come from storage threads and must be quick
/// and never block (count, then return).
public protocol LedgerObserver: Sendable {
    /// A group commit finished: `writes` write transactions committed together.
    func groupCommitted(writes: Int)
    /// A write transaction that re-projected customers committed; `change` is what it did to the
    /// counts of projections by state (only committed transactions are reported, once each).
    func projectionsChanged(_ change: ProjectionTally)
    /// PostgreSQL with read replicas: `reads` reads were served by a replica (`onReplica`), or
    /// sent to the primary because no replica had replayed this process's last commit or could be
    /// reached.
    func readsRouted(_ reads: Int, onReplica: Bool)
    /// A fold of the rollup journal committed: `rows` journal rows' changes were added to the
    /// rollups (0: the journal held none this process could take).
    func rollupJournalFolded(rows: Int)
    /// A fold of the rollup journal failed: its rows stay in the journal for the next fold (reads
    /// count them meanwhile).
    func rollupJournalFoldFailed()
}

extension LedgerObserver {
    public func readsRouted(_ reads: Int, onReplica: Bool) {}
    public func rollupJournalFolded(rows: Int) {}
    public func rollupJournalFoldFailed() {}
}

/// Projected customers by state and subscriptions by status: counts (``LedgerStore/projectionTally()``)
/// or a change to them (``LedgerObserver/projectionsChanged(_:)``, negative for what went away).
///
/// A customer's state comes from their projection rows: `active` with an active entitlement in
/// any environment, `inactive` with entitlement or subscription rows but none active, `new` with none.
/// A subscription's status is its projection row's.
public struct ProjectionTally: Sendable, Equatable {
    public var customers: [String: Int] = [:]
    public var subscriptions: [String: Int] = [:]

    public init(customers: [String: Int] = [:], subscriptions: [String: Int] = [:]) {
        self.customers = customers
        self.subscriptions = subscriptions
    }

    public var isEmpty: Bool { customers.isEmpty && subscriptions.isEmpty }

    /// The state a projection's rows put its customer in.
    package static func customerState(_ projection: CustomerProjection) -> String {
        if projection.entitlements.contains(where: \.active) { return "active" }
        return projection.entitlements.isEmpty && projection.subscriptions.isEmpty ? "new" : "inactive"
    }

    /// Counts `projection` with `sign` (+1 added, -1 removed).
    mutating func count(_ projection: CustomerProjection, _ sign: Int) {
        customers[Self.customerState(projection), default: 0] += sign
        for row in projection.subscriptions { subscriptions[row.status, default: 0] += sign }
    }

    /// Records that a customer's projection went from `before` (nil: none stored) to `after`.
    mutating func replace(_ before: CustomerProjection?, with after: CustomerProjection) {
        if let before { count(before, -1) }
        count(after, 1)
        customers = customers.filter { $0.value != 0 }
        subscriptions = subscriptions.filter { $0.value != 0 }
    }

    /// Takes a projection that is gone (an erased or merged customer's) out of the counts.
    mutating func remove(_ before: CustomerProjection) {
        count(before, -1)
        customers = customers.filter { $0.value != 0 }
        subscriptions = subscriptions.filter { $0.value != 0 }
    }

    /// Adds `other`'s counts to these.
    public mutating func add(_ other: ProjectionTally) {
        for (key, value) in other.customers { customers[key, default: 0] += value }
        for (key, value) in other.subscriptions { subscriptions[key, default: 0] += value }
    }
}

/// The projection changes of one write transaction, collected while it runs; reported only after
/// it committed (a transaction run again starts a new one).
final class TallyBuffer: @unchecked Sendable {
    // Touched only by the one storage thread running the transaction.
    var tally = ProjectionTally()
}

extension Ledger {
    /// Notes, when observed, that a customer's projection is replaced.
    func noteProjection(_ before: CustomerProjection?, _ after: CustomerProjection) {
        tally?.tally.replace(before, with: after)
    }

    /// A stored projection deleted (its customer merged into another, or erased).
    func noteRemoved(_ before: CustomerProjection?) {
        if let before { tally?.tally.remove(before) }
    }

    /// The counts of stored projections (one statement; index lookups per customer, no sort).
    func projectionTally() throws -> ProjectionTally {
        let rows = try session.rows(
            """
            SELECT 'subscription' AS counted, status AS state, COUNT(*) AS count FROM subscription_projections GROUP BY status
            UNION ALL
            SELECT 'customer', kind, COUNT(*) FROM (
                SELECT CASE
                    WHEN EXISTS (SELECT 1 FROM entitlement_projections e WHERE e.customer_id = c.customer_id AND e.active = 1)
                        THEN 'active'
                    WHEN EXISTS (SELECT 1 FROM entitlement_projections e WHERE e.customer_id = c.customer_id)
                        OR EXISTS (SELECT 1 FROM subscription_projections s WHERE s.customer_id = c.customer_id)
                        THEN 'inactive'
                    ELSE 'new' END AS kind
                FROM customer_states c) AS k
            GROUP BY kind
            """, as: TallyRow.self)
        var tally = ProjectionTally()
        for row in rows {
            if row.counted == "subscription" {
                tally.subscriptions[row.state] = row.count
            } else {
                tally.customers[row.state] = row.count
            }
        }
        return tally
    }
}

extension SessionBackedStore {
    /// Runs `body` in a write transaction; once it committed, reports its projection changes to
    /// `ledgerObserver`.
    func observedWrite<T: Sendable>(_ body: @escaping @Sendable (Ledger) throws -> T) async throws -> T {
        let fault = faultInjector
        @Sendable func ledger(_ session: any SQLSession, tally: TallyBuffer?) -> Ledger {
            Ledger(session: session, fault: fault, tally: tally)
        }
        guard let observer = ledgerObserver else {
            return try await write { try body(ledger($0, tally: nil)) }
        }
        let (value, change) = try await write { session in
            let buffer = TallyBuffer()
            let value = try body(ledger(session, tally: buffer))
            return (value, buffer.tally)
        }
        if !change.isEmpty { observer.projectionsChanged(change) }
        return value
    }

    func projectionTally() async throws -> ProjectionTally {
        try await read { try Ledger(session: $0, fault: nil).projectionTally() }
    }
}

/// One count of ``Ledger/projectionTally()``: what is counted, in which state, how many.
private struct TallyRow: Decodable {
    var counted: String
    var state: String
    var count: Int
}
