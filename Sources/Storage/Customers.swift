import Entitlements

/// Customers as people: one customer under several ids, the operator's facts about a
/// customer (promotional grants), a copy of everything stored about a customer, and erasure.
///
/// An alias is a `customers` row of its own (its own `appAccountToken`, which keeps resolving)
/// whose `merged_into` names the customer it belongs to; every read, link and projection resolves
/// an id to that customer. A merge and an erasure are recorded in `customer_events`.
public protocol CustomerDirectory: Sendable {
    /// Makes `alias` one more id of `appUserId`'s customer (created when missing). An `alias` never
    /// seen becomes a new id; a customer under `alias` alone is merged, its subscriptions and
    /// grants counting for the merged customer from then on (its links stay, and resolve).
    /// - Throws: ``StorageError`` `ALIAS_CONFLICT` when `alias` is already an id of another
    ///   customer with several ids; `INVALID_ARGUMENT` when `alias == appUserId`.
    func addAlias(
        _ alias: String, to appUserId: String, actor: String?, projector: Projector, now: Int64
    ) async throws -> AliasOutcome

    /// Appends an operator's fact about a customer (a promotional grant or its end), linked by the
    /// `appAccountToken` it carries, and projects that customer. A replay is a no-op.
    /// - Returns: whether the fact was new.
    @discardableResult
    func appendCustomerFact(_ fact: Fact, projector: Projector, now: Int64) async throws -> Bool

    /// Every stored row about the customer `appUserId` belongs to, table by table; nil when no
    /// such customer exists.
    func exportCustomer(appUserId: String) async throws -> CustomerExport?

    /// Erases the customer `appUserId` belongs to (every one of its ids): its ids and tokens, links,
    /// projections, promotional grants, consumable spends, offer signatures, consent, attributes and merge
    /// records are deleted;
    /// Apple's facts and notifications stay, linked to nobody. The erasure is recorded in
    /// `customer_events` with `actor` and counts, without any erased id. Nil when no such customer.
    func eraseCustomer(appUserId: String, actor: String?, now: Int64) async throws -> ErasureReport?
}

/// How ``CustomerDirectory/addAlias(_:to:actor:projector:now:)`` ended.
public enum AliasOutcome: String, Sendable, Hashable {
    /// A new id of the customer.
    case added
    /// A customer of its own until now, merged.
    case merged
    /// Already an id of this customer; nothing changed.
    case alreadyAlias
}

/// What an erasure removed (counts only: the record of an erasure names no erased id).
public struct ErasureReport: Sendable, Hashable, Codable {
    /// Ids erased (the customer's and its aliases').
    public var ids: Int
    /// Subscriptions unlinked (their Apple facts stay).
    public var subscriptions: Int
    /// The server's own facts about the customer deleted (promotional grants and their ends,
    /// consumable spends).
    public var ownFacts: Int

    public init(ids: Int, subscriptions: Int, ownFacts: Int) {
        self.ids = ids
        self.subscriptions = subscriptions
        self.ownFacts = ownFacts
    }
}

/// Everything stored about one customer: for each table, its rows (column → value) that belong to
/// the customer. Blob columns (notification bodies) are given as their UTF-8 text.
public struct CustomerExport: Sendable, Hashable {
    /// One value of a row.
    public enum Value: Sendable, Hashable {
        case null
        case int(Int64)
        case text(String)
    }

    /// Table name → its rows, each in column order (as `(column, value)` pairs).
    public var tables: [(table: String, rows: [[(column: String, value: Value)]])]

    public static func == (a: CustomerExport, b: CustomerExport) -> Bool {
        a.tables.count == b.tables.count
            && zip(a.tables, b.tables).allSatisfy { x, y in
                x.table == y.table && x.rows.count == y.rows.count
                    && zip(x.rows, y.rows).allSatisfy { r, s in
                        r.count == s.count && zip(r, s).allSatisfy { $0.column == $1.column && $0.value == $1.value }
                    }
            }
    }

    public func hash(into hasher: inout Hasher) {
        for (table, rows) in tables {
            hasher.combine(table)
            hasher.combine(rows.count)
        }
    }

    /// The rows of one table.
    public func rows(_ table: String) -> [[(column: String, value: Value)]] {
        tables.first { $0.table == table }?.rows ?? []
    }
}


extension SessionBackedStore {
    func addAlias(
        _ alias: String, to appUserId: String, actor: String?, projector: Projector, now: Int64
    ) async throws -> AliasOutcome {
        try await observedWrite { try $0.addAlias(alias, to: appUserId, actor: actor, projector: projector, now: now) }
    }

    func appendCustomerFact(_ fact: Fact, projector: Projector, now: Int64) async throws -> Bool {
        let row = FactRow(fact, signed: nil, projector: projector)
        return try await observedWrite { try $0.appendCustomerFact(row, projector: projector, now: now) }
    }

    func exportCustomer(appUserId: String) async throws -> CustomerExport? {
        // One snapshot: every table as of one instant.
        try await read { session in try Ledger.inSnapshot(session) { try $0.export(appUserId: appUserId) } }
    }

    func eraseCustomer(appUserId: String, actor: String?, now: Int64) async throws -> ErasureReport? {
        try await observedWrite { try $0.erase(appUserId: appUserId, actor: actor, now: now) }
    }
}
