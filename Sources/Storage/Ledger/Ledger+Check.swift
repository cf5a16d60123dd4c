// The projection check: every stored projection against a recomputation, writing nothing.

extension Ledger {
    /// Recomputes the projections of the customers after `afterID` (up to `limit` of them), each at
    /// the instant it was stored with, and reports those that differ from what is stored (its state
    /// row or its indexed rows) and those that cannot be projected. Writes nothing; the caller runs
    /// it in one read transaction, so each customer is compared with a consistent snapshot.
    func compareChunk(afterID: Int64, limit: Int, projector: Projector) throws -> RebuildChunk {
        let ids = try session.values(Self.rootIDs(after: afterID, limit: limit), as: Int64.self)
        var chunk = RebuildChunk(next: ids.count == limit ? ids.last : nil, checked: ids.count, changed: [], failed: [])
        for id in ids {
            guard var customer = try customer(id: id) else { continue }
            customer.aliases = Self.others(try group(rootID: id).map(\.appUserId), than: customer.appUserId)
            guard let stored = try storedState(customerID: id) else {
                chunk.changed.append(customer.appUserId)
                continue
            }
            let rows = try session.query(factsWithoutJWS(of: customer.id))
            let fresh: CustomerProjection
            do {
                // The instant it was stored with: a projection that still matches its facts is then
                // equal byte for byte, however long ago it was computed.
                fresh = try project(customer, rows: rows, projector: projector, now: stored.computedAt)
            } catch {
                chunk.failed.append(ProjectionFailure(appUserId: customer.appUserId, reason: String(describing: error)))
                continue
            }
            var kept = stored.projection
            var tables = try tableRows(customerID: id)
            // A state stored before storage kept its own encoding (the upgrade emptied it) is
            // written again by the next projection or rebuild: only its rows can be compared.
            if kept.state.isEmpty && stored.failure == nil {
                kept.state = fresh.state
            }
            tables.state = fresh.state
            if stored.failure != nil || kept != fresh || tables != fresh {
                chunk.changed.append(customer.appUserId)
            }
        }
        return chunk
    }
}
