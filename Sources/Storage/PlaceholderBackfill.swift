/// Gives the subscriptions stored before placeholders existed (facts of an `originalTransactionId`
/// nobody owns, none carrying a token) their placeholder customer (``UnlinkedSubscription``), so
/// that they are answered, searchable and counted like those stored since.
///
/// One pass over the ledger, once: the migration that adds `placeholder_backfill` seeds it with
/// the position 0 when the ledger holds facts; each chunk (its own transaction) moves the position
/// past the facts it read, and the last one deletes the row, so an interrupted backfill resumes
/// where it stopped and a finished one costs one read at each start.
public protocol PlaceholderBackfillStore: Sendable {
    /// Reads the next `limit` facts (at most 1000) and gives each subscription among them that
    /// has no owner and no token its placeholder, its projection computed at `now` (no events:
    /// its history is older than the outbox). Returns how many placeholders it created, and
    /// whether facts remain to read.
    func backfillPlaceholders(projector: Projector, now: Int64, limit: Int) async throws -> (created: Int, more: Bool)
}

extension SessionBackedStore {
    func backfillPlaceholders(projector: Projector, now: Int64, limit: Int) async throws -> (created: Int, more: Bool) {
        try await write { try Ledger(session: $0, fault: nil).backfillPlaceholdersChunk(projector: projector, now: now, limit: limit) }
    }
}

extension Ledger {
    func backfillPlaceholdersChunk(projector: Projector, now: Int64, limit: Int) throws -> (created: Int, more: Bool) {
        guard let after = try session.value("SELECT after_id FROM placeholder_backfill", as: Int64.self) else { return (0, false) }
        let rows = try session.rows(
            """
            SELECT id, original_transaction_id FROM facts WHERE id > \(after) AND original_transaction_id IS NOT NULL
            ORDER BY id LIMIT \(Int64(min(max(limit, 1), 1000)))
            """, as: FactSubscription.self)
        var created = 0
        var seen = Set<String>()
        for row in rows {
            let otid = row.originalTransactionId
            guard seen.insert(otid).inserted else { continue }
            try lockKeys([Self.otidKey(otid)])
            guard try owner(of: otid) == nil, try placeholderMayHold(otid) else { continue }
            var affected: Set<Int64> = []
            let placeholder = try ensureCustomerRow(
                appUserId: UnlinkedSubscription.key(otid), appAccountToken: nil, now: now, affected: &affected)
            try insertLink(otid: otid, customerID: placeholder.id, now: now, via: "unlinked")
            try recompute(customerID: placeholder.id, projector: projector, now: now)
            created += 1
        }
        if let last = rows.last?.id {
            try session.query("UPDATE placeholder_backfill SET after_id = \(last)")
            return (created, true)
        }
        try session.query("DELETE FROM placeholder_backfill")
        return (created, false)
    }
}

private struct FactSubscription: Decodable {
    var id: Int64
    var originalTransactionId: String
}
