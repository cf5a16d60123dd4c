import Entitlements

/// Which rows an export run reads: those that last changed in `(after, through]` (epoch ms).
public struct ExportWindow: Sendable, Hashable {
    /// Exclusive start; nil: from the beginning.
    public var after: Int64?
    /// Inclusive end.
    public var through: Int64

    public init(after: Int64?, through: Int64) {
        self.after = after
        self.through = through
    }

    /// `after` as a bind: below every stored instant when nil.
    var lowerBound: Int64 { after ?? Int64.min }
}

/// A customer as the `customers` table of an export holds it.
public struct ExportedCustomer: Sendable, Hashable {
    /// The internal id: the page cursor, not exported.
    public var id: Int64
    public var appUserId: String
    public var appAccountToken: String
    public var createdAt: Int64
    /// When the customer's answer was last computed or its attributes last changed, whichever is
    /// later (the row's change time).
    public var updatedAt: Int64
    /// Entitlement ids active in any of the customer's environments at `updatedAt`, sorted, distinct.
    public var activeEntitlements: [String]
    /// Whether the last projection failed (the stored answer is the one before it).
    public var projectionFailed: Bool
    /// The attributes the app set on the customer (``CustomerAttributeStore``), by name.
    public var attributes: [CustomerAttribute]
}

/// A subscription as the `subscriptions` table of an export holds it.
public struct ExportedSubscription: Sendable, Hashable {
    public var owned: OwnedSubscription
    /// When the owner's answer, which this row is part of, was last computed.
    public var updatedAt: Int64
}

/// A transaction as the `transactions` table of an export holds it: one version of it (a refund
/// or an upgrade is a newer version, a row of its own). An App Store transaction is the signed one;
/// a Google Play order is ``Entitlements/PlayOrderVersion``'s transaction after the stored answer.
public struct ExportedTransaction: Sendable, Hashable {
    /// The ledger's row id: the page cursor and the `ledger_id` column.
    public var id: Int64
    public var receivedAt: Int64
    /// The app's bundle id, or a Play app's package name.
    public var bundleId: String?
    /// The customer its subscription is linked to (or its token names), if any.
    public var appUserId: String?
    public var fact: TransactionFact
    public var store: PurchaseStore = .appStore
    /// Units of a Play one-time purchase refunded so far; nil otherwise.
    public var refundedQuantity: Int? = nil
}

/// The readers of scheduled exports: each table's rows that changed in a window, one page at a
/// time in a stable order (a cursor from the page's last row), so that memory stays at one page
/// whatever the table's size.
///
/// A row's change time is the writing server's clock at its commit: a customer's and its
/// subscriptions' `computed_at`, a fact's `received_at`, an event's `recorded_at`. A window ending
/// a few minutes before now (``ExportWindow/through``) is therefore complete once written: what a
/// transaction still in flight commits later has a later time.
public protocol ExportReader: Sendable {
    /// Customers whose answer was computed or whose attributes changed in `window`, by internal id
    /// above `afterID`; at most `limit` (1…1000).
    func exportCustomers(_ window: ExportWindow, afterID: Int64, limit: Int) async throws -> [ExportedCustomer]
    /// Subscriptions whose owner's answer was computed in `window`, by originalTransactionId above `after`.
    func exportSubscriptions(_ window: ExportWindow, after: String, limit: Int) async throws -> [ExportedSubscription]
    /// Signed transactions and Play purchase facts (each a version of its order) received in
    /// `window`, by ledger id above `afterID`, decoded by `projector`; a Play fact that names no
    /// charged order yet is no row. Fewer than `limit` rows: none are left.
    /// - Throws: ``StorageError`` when a stored transaction does not decode (nothing is skipped silently).
    func exportTransactions(_ window: ExportWindow, afterID: Int64, limit: Int, projector: Projector) async throws -> [ExportedTransaction]
    /// Events recorded in `window`, by sequence above `afterSequence`.
    func exportEvents(_ window: ExportWindow, afterSequence: Int64, limit: Int) async throws -> [OutboxEvent]
}

extension SessionBackedStore {
    func exportCustomers(_ window: ExportWindow, afterID: Int64, limit: Int) async throws -> [ExportedCustomer] {
        let limit = try Self.exportLimit(limit)
        return try await read { session in
            let rows = try session.rows(
                """
                SELECT cs.customer_id, cs.app_user_id, cs.app_account_token, cs.created_at, cs.computed_at, cs.projection_error,
                    c.attributes_changed_at
                FROM customer_states cs JOIN customers c ON c.id = cs.customer_id
                WHERE cs.customer_id > \(afterID)
                  AND ((cs.computed_at > \(window.lowerBound) AND cs.computed_at <= \(window.through))
                    OR (c.attributes_changed_at > \(window.lowerBound) AND c.attributes_changed_at <= \(window.through)))
                ORDER BY cs.customer_id LIMIT \(limit)
                """, as: CustomerColumns.self)
            guard let first = rows.first, let last = rows.last else { return [] }
            var active: [Int64: Set<String>] = [:]
            for row in try session.rows(
                """
                SELECT customer_id, entitlement FROM entitlement_projections
                WHERE customer_id >= \(first.customerId) AND customer_id <= \(last.customerId) AND active = 1
                """, as: ActiveColumns.self)
            {
                active[row.customerId, default: []].insert(row.entitlement)
            }
            let attributes = try Ledger.readAttributes(session, customerIds: rows.map(\.customerId))
            return rows.map {
                ExportedCustomer(
                    id: $0.customerId, appUserId: $0.appUserId, appAccountToken: $0.appAccountToken, createdAt: $0.createdAt,
                    updatedAt: max($0.computedAt, $0.attributesChangedAt ?? $0.computedAt), activeEntitlements: (active[$0.customerId] ?? []).sorted(),
                    projectionFailed: $0.projectionError != nil, attributes: attributes[$0.customerId] ?? [])
            }
        }
    }

    func exportSubscriptions(_ window: ExportWindow, after: String, limit: Int) async throws -> [ExportedSubscription] {
        let limit = try Self.exportLimit(limit)
        return try await read { session in
            try session.query(
                """
                SELECT \(Ledger.subscriptionColumns), cs.computed_at FROM subscription_projections s
                JOIN customer_states cs ON cs.customer_id = s.customer_id JOIN customers c ON c.id = s.customer_id
                WHERE s.original_transaction_id > \(after) AND cs.computed_at > \(window.lowerBound) AND cs.computed_at <= \(window.through)
                ORDER BY s.original_transaction_id LIMIT \(limit)
                """
            ).map { row in
                ExportedSubscription(owned: try Ledger.decodeOwned(row), updatedAt: try row.decode(ComputedAt.self).computedAt)
            }
        }
    }

    func exportTransactions(_ window: ExportWindow, afterID: Int64, limit: Int, projector: Projector) async throws -> [ExportedTransaction] {
        let limit = try Self.exportLimit(limit)
        return try await read { session in
            var exported: [ExportedTransaction] = []
            var after = afterID
            // Play facts naming no charged order make no row: read on until the page is full.
            while exported.count < limit {
                let page = try Self.exportTransactionPage(session, window, afterID: after, limit: limit, projector: projector)
                exported += page.rows.prefix(Int(limit) - exported.count)
                guard page.read == limit, let last = page.lastID else { break }
                after = last
            }
            return exported
        }
    }

    /// One page of `facts` rows as export rows; `read` the facts read, `lastID` the last one's id.
    private static func exportTransactionPage(
        _ session: any SQLSession, _ window: ExportWindow, afterID: Int64, limit: Int64, projector: Projector
    ) throws -> (rows: [ExportedTransaction], read: Int64, lastID: Int64?) {
        // The owner: the customer the subscription (or purchase token) is linked to, else the one
        // whose token the transaction carries (a one-time purchase without a link).
        let facts = try session.query(
            """
            SELECT f.id, f.kind, f.received_at, f.bundle_id, f.payload, f.payload_packed,
                COALESCE(lc.app_user_id, tc.app_user_id) AS app_user_id
            FROM facts f
            LEFT JOIN links l ON l.original_transaction_id = f.original_transaction_id
            LEFT JOIN customers lc ON lc.id = l.customer_id
            LEFT JOIN customers tc ON l.customer_id IS NULL AND tc.app_account_token = f.app_account_token
            WHERE f.kind IN ('transaction', 'playSubscription', 'playProduct', 'playVoided')
              AND f.id > \(afterID) AND f.received_at > \(window.lowerBound) AND f.received_at <= \(window.through)
            ORDER BY f.id LIMIT \(limit)
            """
        ).map { row in (columns: try row.decode(TransactionColumns.self), fact: projector.decode(try FactPayload.text(row))) }
        let history = try Ledger.playHistory(
            session, tokens: facts.compactMap { $0.fact?.playToken }, throughID: facts.last?.columns.id ?? 0, projector: projector)
        let rows = try facts.compactMap { item -> ExportedTransaction? in
            let columns = item.columns
            var row: ExportedTransaction
            switch item.fact {
            case .transaction(let fact) where columns.kind == "transaction":
                row = ExportedTransaction(id: columns.id, receivedAt: columns.receivedAt, bundleId: columns.bundleId, appUserId: columns.appUserId, fact: fact)
            case let play? where columns.kind != "transaction" && play.playToken != nil:
                let known = history.facts(chainOf: play.playToken!, throughID: columns.id)
                guard let version = PlayOrderVersion(play, among: known, policy: projector.policy) else { return nil }
                row = ExportedTransaction(
                    id: columns.id, receivedAt: columns.receivedAt, bundleId: columns.bundleId, appUserId: columns.appUserId,
                    fact: version.transaction)
                row.store = .playStore
                row.refundedQuantity = version.refundedQuantity
            default:
                throw StorageError(.corrupt, "stored \(columns.kind) \(columns.id) does not decode as one")
            }
            return row
        }
        return (rows, Int64(facts.count), facts.last?.columns.id)
    }

    func exportEvents(_ window: ExportWindow, afterSequence: Int64, limit: Int) async throws -> [OutboxEvent] {
        let limit = try Self.exportLimit(limit)
        return try await read { session in
            try Ledger.decodeEvents(
                session.query(
                    """
                    SELECT \(Ledger.eventColumns) FROM events WHERE seq > \(afterSequence) AND recorded_at > \(window.lowerBound) AND recorded_at <= \(window.through)
                    ORDER BY seq LIMIT \(limit)
                    """
                ), session: session)
        }
    }

    static func exportLimit(_ limit: Int) throws -> Int64 {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        return Int64(limit)
    }
}

private struct ComputedAt: Decodable { var computedAt: Int64 }

private struct CustomerColumns: Decodable {
    var customerId: Int64, appUserId: String, appAccountToken: String, createdAt: Int64, computedAt: Int64, projectionError: String?
    var attributesChangedAt: Int64?
}

private struct ActiveColumns: Decodable { var customerId: Int64, entitlement: String }

private struct TransactionColumns: Decodable { var id: Int64, kind: String, receivedAt: Int64, bundleId: String?, appUserId: String? }
