// Consumables (balances with spends) and the customer's storefront: the parts of the derivation
// the server's own facts and the catalog's storefronts meet.

extension Canon {
    /// One spend per idempotency key, sorted by key. Storage keeps one spend per key; should two
    /// ever meet, the earliest by `(spentAt, quantity, productId)` counts, so the choice does not
    /// depend on the order of the facts.
    static func onePerKey(_ spends: [ConsumableSpendFact]) -> [ConsumableSpendFact] {
        let sorted = spends.sorted { a, b in
            a.idempotencyKey != b.idempotencyKey
                ? a.idempotencyKey < b.idempotencyKey
                : (a.spentAt, a.quantity, a.productId) < (b.spentAt, b.quantity, b.productId)
        }
        return sorted.indices.filter { $0 == 0 || sorted[$0 - 1].idempotencyKey != sorted[$0].idempotencyKey }.map { sorted[$0] }
    }
}

extension Derivation {
    /// The storefront of the latest transaction that names one (latest purchase, then latest
    /// signature, then transactionId: a total order, so the facts' order does not matter).
    /// A Play subscription counts by its newest snapshot (purchased at its `startTime`).
    func latestStorefront() -> StorefrontState? {
        var best: (purchase: Int64, signed: Int64, transactionId: String, state: StorefrontState)?
        func consider(_ purchase: Int64, _ signed: Int64, _ transactionId: String, _ storefront: String?, _ storefrontId: String?) {
            guard let storefront else { return }
            if let b = best, (purchase, signed, transactionId) <= (b.purchase, b.signed, b.transactionId) { return }
            best = (purchase, signed, transactionId, StorefrontState(storefront: storefront, storefrontId: storefrontId, transactionId: transactionId))
        }
        for t in canon.transactions { consider(t.purchase, t.signed, t.transactionId, t.storefront, t.storefrontId) }
        for s in canon.playSubscriptions {
            consider(s.fact.startTime ?? s.fact.observedAt, s.fact.observedAt, s.fact.purchaseToken, s.fact.storefront, nil)
        }
        return best?.state
    }

    /// Balances per consumable product: transactions credit, refunds debit, spends subtract.
    func consumableBalances(_ indices: [Int]) -> [ConsumableBalance] {
        let txns = canon.transactions
        var byProduct: [String: [Int]] = [:]
        for index in indices { byProduct[txns[index].productId, default: []].append(index) }
        var spentByProduct: [String: (spent: Int, keys: [String])] = [:]
        // Spends are sorted by key, so each product's key list is too.
        for spend in canon.spends {
            var entry = spentByProduct[spend.productId] ?? (0, [])
            entry.spent = entry.spent.plus(spend.quantity)
            entry.keys.append(spend.idempotencyKey)
            spentByProduct[spend.productId] = entry
            if byProduct[spend.productId] == nil { byProduct[spend.productId] = [] }
        }
        return byProduct.keys.sorted().map { productId in
            var credited = 0
            var debited = 0
            var ids: [String] = []
            var refunded: [String] = []
            // Indices follow canon order (sorted by transactionId), so the id lists are sorted.
            for index in byProduct[productId]! {
                let t = txns[index]
                credited = credited.plus(t.quantity)
                ids.append(t.transactionId)
                if t.revokedAs != nil {
                    debited = debited.plus(t.quantity)
                    refunded.append(t.transactionId)
                } else if t.refundedQuantity > 0 {
                    // A quantity-based partial refund takes back only its units.
                    debited = debited.plus(min(t.refundedQuantity, t.quantity))
                    refunded.append(t.transactionId)
                }
            }
            let spends = spentByProduct[productId]
            return ConsumableBalance(
                productId: productId, credited: credited, debited: debited, transactionIds: ids,
                refundedTransactionIds: refunded, spent: spends?.spent ?? 0, spendKeys: spends?.keys ?? [])
        }
    }
}
