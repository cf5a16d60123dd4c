import Entitlements

/// What a spend of consumable units did (``ConsumableSpending/spend(_:projector:now:)``).
public enum SpendOutcome: Sendable, Equatable {
    /// Recorded now: the stored spend, its `balanceAfter` the product's new balance.
    case spent(ConsumableSpendFact)
    /// The customer spent this key before, for the same product and quantity: that spend,
    /// unchanged (nothing is spent again).
    case replayed(ConsumableSpendFact)
    /// The customer spent this key before for another product or quantity: that spend (nothing
    /// is spent).
    case keyReused(ConsumableSpendFact)
    /// The balance does not cover the quantity in any of the environments asked: nothing is
    /// spent. `balance` is the first environment's.
    case insufficient(balance: Int)
    /// No customer has this appUserId.
    case customerNotFound
}

/// A request to spend units of a consumable.
public struct SpendRequest: Sendable, Hashable {
    public var appUserId: String
    public var productId: String
    public var quantity: Int
    public var idempotencyKey: String
    /// Where the units may come from, in order: the first environment whose balance covers the
    /// quantity pays (an answer merges several environments, and so does spending from it).
    public var environments: [Environment]

    public init(appUserId: String, productId: String, quantity: Int, idempotencyKey: String, environments: [Environment]) {
        self.appUserId = appUserId
        self.productId = productId
        self.quantity = quantity
        self.idempotencyKey = idempotencyKey
        self.environments = environments
    }
}

/// Spending consumables: a spend is a fact in the ledger (``Entitlements/ConsumableSpendFact``),
/// so the balance replays from the ledger (`rebuild` reproduces it).
public protocol ConsumableSpending: Sendable {
    /// Spends `request.quantity` units, durably, in one write transaction: the customer's row is
    /// locked (PostgreSQL), the key looked up, the balance evaluated from the customer's facts and
    /// the spend stored with the customer's recomputed projection only when the balance covers it.
    /// Concurrent spends of one customer run one after another, so the last unit is spent once.
    func spend(_ request: SpendRequest, projector: Projector, now: Int64) async throws -> SpendOutcome
}


extension SessionBackedStore {
    func spend(_ request: SpendRequest, projector: Projector, now: Int64) async throws -> SpendOutcome {
        try await observedWrite { try $0.spend(request, projector: projector, now: now) }
    }
}

extension Ledger {
    /// See ``ConsumableSpending/spend(_:projector:now:)``.
    func spend(_ request: SpendRequest, projector: Projector, now: Int64) throws -> SpendOutcome {
        guard request.quantity > 0, !request.environments.isEmpty else {
            throw StorageError(.invalidArgument, "a spend needs a positive quantity and an environment")
        }
        guard let found = try customer(appUserId: request.appUserId), let customer = try lockedCustomer(found.id) else {
            return .customerNotFound
        }
        var spend = ConsumableSpendFact(
            appAccountToken: Self.normalizeToken(customer.appAccountToken), productId: request.productId,
            quantity: request.quantity, idempotencyKey: request.idempotencyKey, spentAt: now, balanceAfter: 0,
            environment: request.environments[0])
        // The key's identity names the customer and the key alone, so an earlier spend under the
        // key is found whatever it spent.
        let digest = FactDigest.hex(Fact.consumableSpend(spend).identity ?? "")
        if let row = try session.query(
            "SELECT payload, payload_packed FROM facts WHERE \(LedgerKeys.fact(kind: Fact.consumableSpendKind, key: FactDigest.stored(digest), dialect: session.dialect))").first {
            guard case .consumableSpend(let earlier)? = projector.decode(try FactPayload.text(row)) else {
                throw StorageError(.corrupt, "a stored spend does not decode")
            }
            let same = earlier.productId == request.productId && earlier.quantity == request.quantity
            return same ? .replayed(earlier) : .keyReused(earlier)
        }
        let facts: [Fact]
        do {
            facts = try Self.engineFacts(try session.query(factsWithoutJWS(of: customer.id)), projector: projector, known: [:])
        } catch let error as UndecodableFact {
            throw StorageError(.projectionFailed, "this customer's balance cannot be computed", detail: error.description)
        }
        var firstBalance: Int?
        var payer: (Environment, Int)?
        for environment in request.environments {
            let state = evaluate(facts: facts, policy: projector.policy, now: now, environment: environment)
            let balance = state.consumable(request.productId)?.balance ?? 0
            if firstBalance == nil { firstBalance = balance }
            if balance >= request.quantity {
                payer = (environment, balance)
                break
            }
        }
        guard let (environment, balance) = payer else { return .insufficient(balance: firstBalance ?? 0) }
        spend.environment = environment
        spend.balanceAfter = balance - request.quantity
        let row = FactRow(.consumableSpend(spend), signed: nil, projector: projector)
        let inserted = try session.query(
            Self.insertFacts([
                try Self.factValues(
                    row, notificationID: nil, signed: row.signed, signedPacked: nil, appAccountToken: row.appAccountToken,
                    environment: environment.rawValue, bundleId: nil, receivedAt: now, dialect: session.dialect)
            ], dialect: session.dialect))
        guard !inserted.isEmpty else { throw StorageError(.conflict, "the spend's key was taken concurrently") }
        try inject(.afterFacts)
        let (_, failure) = try recompute(customerID: customer.id, projector: projector, now: now, known: [row.payload: row.fact])
        if let failure { throw StorageError(.projectionFailed, "this customer's balance cannot be computed", detail: failure.reason) }
        try inject(.afterProjections)
        return .spent(spend)
    }
}
