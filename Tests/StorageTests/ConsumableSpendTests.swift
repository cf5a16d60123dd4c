import Entitlements
import Foundation
import Testing

@testable import Storage

/// Spending consumables (`ConsumableSpending`) on every backend: a spend is a ledger fact, so the
/// balance replays (every test ends with a rebuild that must find no difference).
@Suite struct ConsumableSpendTests {
    static let token = "6f2d7a1e-0c4b-4b8e-9d3a-2f1e0a9b8c7d"

    /// A consumable purchase of `quantity` coins carrying the customer's token.
    static func coins(_ tid: String, quantity: Int, refunded: Bool = false, signed: Int64 = testNow - day) -> SignedFact {
        let fact = Fact.transaction(
            TransactionFact(
                transactionId: tid, originalTransactionId: tid, productId: "coins", purchaseDate: testNow - day, quantity: quantity,
                productType: .consumable, appAccountToken: token, signedDate: signed, revocationDate: refunded ? signed : nil))
        return (fact, Fixture.signed(fact))
    }

    static func request(_ quantity: Int, key: String, product: String = "coins") -> SpendRequest {
        SpendRequest(appUserId: "alice", productId: product, quantity: quantity, idempotencyKey: key, environments: [.production])
    }

    /// Alice with `quantity` coins bought.
    static func alice(_ store: any LedgerStore, quantity: Int) async throws -> any ConsumableSpending {
        _ = try await store.ensureCustomer(appUserId: "alice", appAccountToken: token, projector: testProjector, now: testNow)
        _ = try await store.ingest(Fixture.batch(facts: [coins("c1", quantity: quantity)]), projector: testProjector, now: testNow)
        return store
    }

    /// The balance replayed from the ledger's facts alone.
    static func replayedBalance(_ store: any LedgerStore) async throws -> ConsumableBalance? {
        let facts = try await store.facts(appUserId: "alice").compactMap(\.fact)
        return evaluate(facts: facts, policy: testProjector.policy, now: testNow, environment: .production).consumable("coins")
    }

    @Test("a spend lowers the balance durably; the same key spends once", arguments: Backend.all)
    func spendIsIdempotent(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let spender = try await Self.alice(store, quantity: 5)
            let first = try await spender.spend(Self.request(2, key: "k1"), projector: testProjector, now: testNow)
            guard case .spent(let spend) = first else { Issue.record("not spent: \(first)"); return }
            #expect(spend.balanceAfter == 3)
            let again = try await spender.spend(Self.request(2, key: "k1"), projector: testProjector, now: testNow + 1000)
            #expect(again == .replayed(spend))
            let balance = try #require(try await Self.replayedBalance(store))
            #expect((balance.credited, balance.debited, balance.spent, balance.balance) == (5, 0, 2, 3))
            #expect(balance.spendKeys == ["k1"])
            // The stored projection says the same.
            let stored = try #require(try await store.projection(appUserId: "alice"))
            struct Document: Decodable { var state: CustomerState }
            let state = try JSONDecoder().decode(Document.self, from: Data(stored.document)).state
            #expect(state.consumable("coins")?.balance == 3)
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE kind = 'consumableSpend'") == 1)
        }
    }

    @Test(
        "a key used again for another spend is refused and spends nothing",
        arguments: [(3, "coins"), (2, "gems")] as [(Int, String)])
    func reusedKeyIsRefused(quantity: Int, product: String) async throws {
        try await withStore(.sqliteMemory) { store, _ in
            let spender = try await Self.alice(store, quantity: 5)
            guard case .spent(let spend) = try await spender.spend(Self.request(2, key: "k1"), projector: testProjector, now: testNow)
            else { Issue.record("not spent"); return }
            let reused = try await spender.spend(
                Self.request(quantity, key: "k1", product: product), projector: testProjector, now: testNow)
            #expect(reused == .keyReused(spend))
            #expect(try await Self.replayedBalance(store)?.balance == 3)
        }
    }

    @Test("a spend above the balance is refused; the balance never goes below zero by spending", arguments: Backend.all)
    func insufficientBalance(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let spender = try await Self.alice(store, quantity: 2)
            #expect(try await spender.spend(Self.request(3, key: "k1"), projector: testProjector, now: testNow) == .insufficient(balance: 2))
            guard case .spent = try await spender.spend(Self.request(2, key: "k2"), projector: testProjector, now: testNow) else {
                Issue.record("not spent"); return
            }
            #expect(try await spender.spend(Self.request(1, key: "k3"), projector: testProjector, now: testNow) == .insufficient(balance: 0))
            #expect(try await spender.spend(Self.request(1, key: "k4", product: "gems"), projector: testProjector, now: testNow) == .insufficient(balance: 0))
            #expect(try await Self.replayedBalance(store)?.balance == 0)
            let nobody = SpendRequest(appUserId: "bob", productId: "coins", quantity: 1, idempotencyKey: "k", environments: [.production])
            #expect(try await spender.spend(nobody, projector: testProjector, now: testNow) == .customerNotFound)
        }
    }

    @Test("a refund of a consumable purchase reduces the balance", arguments: Backend.all)
    func refundReducesBalance(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let spender = try await Self.alice(store, quantity: 5)
            _ = try await store.ingest(Fixture.batch(facts: [Self.coins("c2", quantity: 3)]), projector: testProjector, now: testNow)
            guard case .spent = try await spender.spend(Self.request(1, key: "k1"), projector: testProjector, now: testNow) else {
                Issue.record("not spent"); return
            }
            // Apple re-signs c2 with its refund.
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.coins("c2", quantity: 3, refunded: true, signed: testNow)]), projector: testProjector,
                now: testNow)
            let balance = try #require(try await Self.replayedBalance(store))
            #expect((balance.credited, balance.debited, balance.spent, balance.balance) == (8, 3, 1, 4))
            #expect(try await spender.spend(Self.request(5, key: "k2"), projector: testProjector, now: testNow) == .insufficient(balance: 4))
        }
    }

    @Test("the balance comes from the first environment that covers the spend")
    func environmentsInOrder() async throws {
        try await withStore(.sqliteMemory) { store, _ in
            _ = try await store.ensureCustomer(appUserId: "alice", appAccountToken: Self.token, projector: testProjector, now: testNow)
            var sandbox = TransactionFact(
                transactionId: "s1", originalTransactionId: "s1", productId: "coins", purchaseDate: testNow, quantity: 4,
                productType: .consumable, appAccountToken: Self.token, signedDate: testNow, environment: .sandbox)
            sandbox.storefront = "FRA"
            _ = try await store.ingest(
                Fixture.batch(facts: [(.transaction(sandbox), Fixture.signed(.transaction(sandbox)))]), projector: testProjector,
                now: testNow)
            let spender = store
            var request = Self.request(3, key: "k1")
            request.environments = [.production, .sandbox]
            let outcome = try await spender.spend(request, projector: testProjector, now: testNow)
            guard case .spent(let spend) = outcome else { Issue.record("not spent: \(outcome)"); return }
            #expect(spend.environment == .sandbox)
            #expect(spend.balanceAfter == 1)
        }
    }

    /// Concurrent spends of the last unit: exactly one wins (PostgreSQL runs them on several
    /// connections at once; the customer's row lock serializes them).
    @Test(
        "concurrent spends of the last units: exactly the balance is spent",
        arguments: Backend.all.flatMap { backend in [(backend, 1, 8), (backend, 3, 12)] })
    func concurrentSpends(backend: Backend, balance: Int, spenders: Int) async throws {
        try await withStore(backend) { store, _ in
            let spender = try await Self.alice(store, quantity: balance)
            let outcomes = try await withThrowingTaskGroup(of: SpendOutcome.self) { group in
                for index in 0..<spenders {
                    group.addTask { try await spender.spend(Self.request(1, key: "k\(index)"), projector: testProjector, now: testNow) }
                }
                var all: [SpendOutcome] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            let spent = outcomes.filter { if case .spent = $0 { true } else { false } }
            #expect(spent.count == balance)
            #expect(outcomes.filter { $0 == .insufficient(balance: 0) }.count == spenders - balance)
            #expect(try await Self.replayedBalance(store)?.balance == 0)
        }
    }

    @Test("one key sent concurrently spends once; every answer is that spend", arguments: Backend.all)
    func concurrentReplays(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let spender = try await Self.alice(store, quantity: 5)
            let outcomes = try await withThrowingTaskGroup(of: SpendOutcome.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await spender.spend(Self.request(2, key: "same"), projector: testProjector, now: testNow) }
                }
                var all: [SpendOutcome] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            let spends = outcomes.compactMap { outcome -> ConsumableSpendFact? in
                switch outcome {
                case .spent(let spend): spend
                default: nil
                }
            }
            #expect(spends.count == 1)
            let spend = try #require(spends.first)
            #expect(outcomes.filter { $0 == .replayed(spend) }.count == 5)
            #expect(try await Self.replayedBalance(store)?.balance == 3)
        }
    }
}
