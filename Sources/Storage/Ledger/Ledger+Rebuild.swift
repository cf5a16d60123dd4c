import Entitlements

// Projection failures and the rebuild: what happens when a customer cannot be projected.

extension Ledger {
    /// Marks a customer's stored projection failed. The last good rows stay (the indexed tables
    /// and the encoded rows) so that nothing else changes; the state and the stored answer are
    /// emptied, so no reader can serve them as the customer's answer.
    func markFailed(_ customer: CustomerRecord, failure: ProjectionFailure, kept: CustomerProjection?, now: Int64) throws {
        var rows = kept ?? CustomerProjection()
        rows.state = []
        try session.query(
            """
            INSERT INTO customer_states (app_user_id, customer_id, app_account_token, created_at, state, projection_rows,
                                         computed_at, projection_error)
            VALUES (\(customer.appUserId), \(customer.id), \(customer.appAccountToken), \(customer.createdAt), '', \(RowCodec.encode(rows)), \(now), \(failure.reason))
            ON CONFLICT (app_user_id) DO UPDATE SET state = excluded.state, computed_at = excluded.computed_at,
                projection_error = excluded.projection_error, answer = NULL
            """)
    }

    /// What one chunk of a rebuild found.
    struct RebuildChunk: Sendable {
        /// The last id seen (nil when done).
        var next: Int64?
        var checked: Int
        var changed: [String]
        var failed: [ProjectionFailure]
    }

    /// Recomputes the customers after `afterID` (up to `limit` of them). A customer the projector
    /// fails for is marked failed and reported; the others go on.
    func rebuildChunk(afterID: Int64, limit: Int, projector: Projector, now: Int64) throws -> RebuildChunk {
        let ids = try session.values(Self.rootIDs(after: afterID, limit: limit), as: Int64.self)
        var chunk = RebuildChunk(next: ids.count == limit ? ids.last : nil, checked: ids.count, changed: [], failed: [])
        for id in ids {
            guard var customer = try lockedCustomer(id) else { continue }
            customer.aliases = Self.others(try group(rootID: id).map(\.appUserId), than: customer.appUserId)
            let stored = try storedState(customerID: id)
            let rows = try session.query(factsWithoutJWS(of: customer.id))
            let fresh: CustomerProjection
            let facts: [Fact]
            do {
                (fresh, facts) = try projectWithFacts(customer, rows: rows, projector: projector, now: now)
            } catch {
                let failure = ProjectionFailure(appUserId: customer.appUserId, reason: String(describing: error))
                if stored?.failure != failure.reason {
                    try markFailed(customer, failure: failure, kept: stored?.projection, now: now)
                }
                chunk.failed.append(failure)
                continue
            }
            try updateMetrics(customerID: id, facts: facts, projector: projector)
            // Both copies must match: the state row (the API's read) and the indexed row tables.
            var tables = try tableRows(customerID: id)
            tables.state = fresh.state
            if stored?.projection != fresh || stored?.failure != nil || tables != fresh {
                try write(fresh, for: customer, now: now, previous: nil)
                noteProjection(stored?.projection, fresh)
                chunk.changed.append(customer.appUserId)
            }
        }
        return chunk
    }
}
