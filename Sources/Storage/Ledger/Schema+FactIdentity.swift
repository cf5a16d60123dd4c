import Entitlements
import Foundation

extension Schema {
    /// The kinds of facts that have no signed text: the server keys them on ``Fact/identity``.
    static let unsignedFactKinds = ["receipt", "pendingRenewal", "v1Notification"]

    /// Version 6: V1 and receipt facts were keyed by the digest of their JSON, so a change to the
    /// encoder or to a fact's fields made a replayed delivery new facts. Each such row's `jws` and
    /// key are recomputed from its payload's ``Fact/identity``, in id order. A row whose identity
    /// an earlier row already holds (the same fact stored twice under two encodings) keeps its old
    /// key: it stays as it was, and a replay now finds the earlier row's. A payload that does not
    /// decode as an engine fact (not written by the server) is left alone.
    static func rekeyUnsignedFacts(_ session: any SQLSession) throws {
        let decoder = JSONDecoder()
        var after: Int64 = 0
        while true {
            let rows = try session.rows(
                """
                SELECT id, kind, payload AS text, jws_sha256 AS key FROM facts
                WHERE id > \(after) AND kind IN (\(list: unsignedFactKinds.sorted())) ORDER BY id LIMIT 500
                """, as: KeyedFact.self)
            guard !rows.isEmpty else { return }
            var updates: [SQLQuery] = []
            for row in rows {
                after = row.id
                guard let fact = try? decoder.decode(Fact.self, from: Data(row.text.utf8)),
                    let identity = fact.identity
                else { continue }
                let key = FactDigest.hex(identity)
                guard key != row.key else { continue }
                updates.append(
                    (
                        """
                        UPDATE facts SET jws_sha256 = \(key), jws = \(identity)
                        WHERE id = \(after) AND NOT EXISTS (SELECT 1 FROM facts WHERE kind = \(row.kind) AND jws_sha256 = \(key))
                        """ as SQLQuery))
            }
            if !updates.isEmpty { _ = try session.pipeline(updates) }
        }
    }
}
