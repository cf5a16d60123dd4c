import Testing

@testable import Entitlements

/// Consumable balances with spends, and the customer's storefront, as the engine derives them.
@Suite struct ConsumableAndStorefrontTests {
    static let now: Int64 = 1_800_000_000_000
    static let token = "6f2d7a1e-0c4b-4b8e-9d3a-2f1e0a9b8c7d"

    static func purchase(_ tid: String, _ quantity: Int, refunded: Bool = false, product: String = "coins") -> Fact {
        .transaction(
            TransactionFact(
                transactionId: tid, originalTransactionId: tid, productId: product, purchaseDate: now - 10_000, quantity: quantity,
                productType: .consumable, appAccountToken: token, signedDate: refunded ? now - 1000 : now - 10_000,
                revocationDate: refunded ? now - 1000 : nil))
    }

    static func spend(_ key: String, _ quantity: Int, product: String = "coins", environment: Environment = .production) -> Fact {
        .consumableSpend(
            ConsumableSpendFact(
                appAccountToken: token, productId: product, quantity: quantity, idempotencyKey: key, spentAt: now - 500,
                balanceAfter: 0, environment: environment))
    }

    @Test(
        "balance = purchased − refunded − spent",
        arguments: [
            ([purchase("t1", 5)], 5, 0, 0, 5, [String]()),
            ([purchase("t1", 5), spend("a", 2)], 5, 0, 2, 3, ["a"]),
            ([purchase("t1", 5), purchase("t2", 3), purchase("t2", 3, refunded: true), spend("a", 2)], 8, 3, 2, 3, ["a"]),
            // The same spend twice (a replayed fact) counts once.
            ([purchase("t1", 5), spend("a", 2), spend("a", 2), spend("b", 1)], 5, 0, 3, 2, ["a", "b"]),
            // Another product's and another environment's spends do not count.
            ([purchase("t1", 5), spend("a", 2, product: "gems"), spend("b", 1, environment: .sandbox)], 5, 0, 0, 5, []),
            // A refund of units already spent takes the balance below zero (the next purchase pays them).
            ([purchase("t1", 2), spend("a", 2), purchase("t1", 2, refunded: true)], 2, 2, 2, -2, ["a"]),
        ] as [([Fact], Int, Int, Int, Int, [String])])
    func balances(facts: [Fact], purchased: Int, refunded: Int, spent: Int, balance: Int, keys: [String]) throws {
        let state = evaluate(facts: facts, policy: Policy(products: [:]), now: Self.now)
        let coins = try #require(state.consumable("coins"))
        #expect((coins.credited, coins.debited, coins.spent, coins.balance) == (purchased, refunded, spent, balance))
        #expect(coins.spendKeys == keys)
        // Any order, any duplicates: the same state.
        for reordered in [facts.reversed(), facts + facts, Array(facts.dropFirst()) + facts.prefix(1)] {
            #expect(evaluate(facts: Array(reordered), policy: Policy(products: [:]), now: Self.now) == state)
        }
    }

    @Test func twoSpendsUnderOneKeyPickTheSameOneInAnyOrder() {
        let a = Self.spend("k", 1)
        var bigger = ConsumableSpendFact(
            appAccountToken: Self.token, productId: "coins", quantity: 3, idempotencyKey: "k", spentAt: Self.now - 500, balanceAfter: 0)
        bigger.spentAt -= 1
        let facts = [Self.purchase("t1", 5), a, .consumableSpend(bigger)]
        let forward = evaluate(facts: facts, policy: Policy(products: [:]), now: Self.now)
        #expect(forward == evaluate(facts: facts.reversed(), policy: Policy(products: [:]), now: Self.now))
        #expect(forward.consumable("coins")?.spent == 3)
    }

    @Test func aSpendIsOneFactPerCustomerAndKey() {
        let one = Self.spend("k", 1)
        let other = Self.spend("k", 4, product: "gems")
        #expect(one.identity == other.identity)
        #expect(one.identity != Self.spend("k2", 1).identity)
        var someoneElse = ConsumableSpendFact(
            appAccountToken: "00000000-0000-4000-8000-000000000000", productId: "coins", quantity: 1, idempotencyKey: "k",
            spentAt: 0, balanceAfter: 0)
        #expect(Fact.consumableSpend(someoneElse).identity != one.identity)
        someoneElse.appAccountToken = Self.token.uppercased()
        #expect(Fact.consumableSpend(someoneElse).identity == one.identity)
    }

    static func bought(_ tid: String, at purchase: Int64, storefront: String?, id: String?, signed: Int64? = nil) -> Fact {
        var t = TransactionFact(
            transactionId: tid, originalTransactionId: tid, productId: "lifetime", purchaseDate: purchase,
            productType: .nonConsumable, signedDate: signed ?? purchase)
        t.storefront = storefront
        t.storefrontId = id
        return .transaction(t)
    }

    @Test(
        "the storefront is the latest purchase's that names one",
        arguments: [
            ([Fact](), nil as String?, nil as String?),
            ([bought("t1", at: now - 9, storefront: "USA", id: "143441")], "USA", "143441"),
            ([bought("t1", at: now - 9, storefront: "USA", id: "143441"), bought("t2", at: now - 5, storefront: "FRA", id: nil)], "FRA", nil),
            // A later purchase without a storefront does not hide the last known one.
            ([bought("t1", at: now - 9, storefront: "USA", id: "143441"), bought("t2", at: now - 5, storefront: nil, id: nil)], "USA", "143441"),
            // A tie on purchase: the later signature, then the transaction id, decide.
            ([bought("t1", at: now - 5, storefront: "USA", id: nil, signed: now - 1), bought("t2", at: now - 5, storefront: "DEU", id: nil)],
             "USA", nil),
        ] as [([Fact], String?, String?)])
    func storefront(facts: [Fact], storefront: String?, storefrontId: String?) {
        let state = evaluate(facts: facts, policy: Policy(products: [:]), now: Self.now)
        #expect(state.storefront?.storefront == storefront)
        #expect(state.storefront?.storefrontId == storefrontId)
        #expect(evaluate(facts: facts.reversed(), policy: Policy(products: [:]), now: Self.now) == state)
    }
}
