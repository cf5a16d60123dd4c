import Entitlements

extension Fact {
    /// The purchase token of a Play purchase fact (snapshot or voiding); nil for other facts.
    var playToken: String? {
        switch self {
        case .playSubscription(let f): f.purchaseToken
        case .playProduct(let f): f.purchaseToken
        case .playVoided(let f): f.purchaseToken
        default: nil
        }
    }
}

extension Ledger {
    /// The Play facts of `tokens` and of the tokens their subscriptions replaced
    /// (`linkedPurchaseToken`, followed to the chain's start), stored up to `throughID`, by
    /// ledger id: what a Play order's export row is made from (``Entitlements/PlayOrderVersion``).
    static func playHistory(_ session: any SQLSession, tokens: [String], throughID: Int64, projector: Projector) throws -> PlayHistory {
        var history: [(id: Int64, fact: Fact)] = []
        var loaded: Set<String> = []
        var wanted = Set(tokens)
        // A chain is a handful of tokens; the bound only guards against a hostile history.
        for _ in 0..<32 where !wanted.isEmpty {
            loaded.formUnion(wanted)
            let batch = try session.query(
                """
                SELECT id, payload, payload_packed FROM facts
                WHERE kind IN ('playSubscription', 'playProduct', 'playVoided') AND original_transaction_id IN (\(list: wanted.sorted()))
                  AND id <= \(throughID)
                """
            ).map { row -> (id: Int64, fact: Fact) in
                let id = try row.decode(FactID.self).id
                guard let fact = projector.decode(try FactPayload.text(row)) else {
                    throw StorageError(.corrupt, "stored Play fact \(id) does not decode")
                }
                return (id, fact)
            }
            history += batch
            wanted = Set(batch.compactMap { if case .playSubscription(let s) = $0.fact { s.linkedPurchaseToken } else { nil } }).subtracting(loaded)
        }
        return PlayHistory(byToken: Dictionary(grouping: history.sorted { $0.id < $1.id }) { $0.fact.playToken ?? "" })
    }
}

/// Stored Play facts by purchase token, each token's by ledger id.
struct PlayHistory {
    var byToken: [String: [(id: Int64, fact: Fact)]]

    /// The facts of `token` and of the tokens its subscription replaced, stored up to `throughID`.
    func facts(chainOf token: String, throughID: Int64) -> [Fact] {
        var chain: [String] = []
        var next: String? = token
        while let current = next, !chain.contains(current), chain.count < 32 {
            chain.append(current)
            next = byToken[current]?.lazy.compactMap { item -> String? in
                guard item.id <= throughID, case .playSubscription(let s) = item.fact else { return nil }
                return s.linkedPurchaseToken
            }.first
        }
        return chain.flatMap { (byToken[$0] ?? []).filter { $0.id <= throughID }.map(\.fact) }
    }
}

private struct FactID: Decodable { var id: Int64 }
