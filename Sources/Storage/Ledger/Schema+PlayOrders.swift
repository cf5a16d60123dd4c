import Entitlements
import Foundation

extension Schema {
    /// The order ids of the Play purchases stored before `play_orders` was kept (``PlayOrderStore``),
    /// read from their stored snapshots in the order they were stored, as the ledger would have
    /// recorded them (first writer wins), so that a refund review of an older order finds its
    /// purchase. A migration rather than a job at start-up: the table is complete before the
    /// server answers anything, in the one transaction that upgrades the schema, and only Play
    /// snapshots are read. A payload that does not decode as an engine fact is left alone.
    static func fillPlayOrders(_ session: any SQLSession) throws {
        let decoder = JSONDecoder()
        var after: Int64 = 0
        while true {
            let rows = try session.query(
                """
                SELECT id, bundle_id, payload, payload_packed FROM facts
                WHERE id > \(after) AND kind IN ('playSubscription', 'playProduct') ORDER BY id LIMIT 500
                """)
            guard !rows.isEmpty else { return }
            var inserts: [SQLQuery] = []
            for row in rows {
                let columns = try row.decode(StoredPlayFact.self)
                after = columns.id
                guard let fact = try? decoder.decode(Fact.self, from: Data(try FactPayload.bytes(row))), let order = PlayOrder(fact) else {
                    continue
                }
                inserts.append(order.insert(packageName: columns.bundleId ?? ""))
            }
            if !inserts.isEmpty { _ = try session.pipeline(inserts) }
        }
    }

    private struct StoredPlayFact: Decodable {
        var id: Int64
        var bundleId: String?
    }
}
