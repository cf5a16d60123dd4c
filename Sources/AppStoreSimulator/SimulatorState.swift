import AppStore

/// Everything the simulated App Store needs to continue after a restart — the virtual time, the
/// catalog as the actions left it, customers, families, subscriptions, transactions and the next
/// transaction and web-order numbers — so that a restarted simulator neither reissues an id nor
/// moves time backwards. `entitled dev` keeps it in its data folder. Delivery history is not part
/// of it (it is a record, not state).
public struct SimulatorState: Sendable, Codable, Equatable {
    /// The layout of this value; a saved state of another version is refused, not guessed at.
    public static let currentVersion = 1

    public var version: Int
    /// The virtual time, epoch milliseconds.
    public var now: Int64
    public var catalog: Catalog
    public var environment: String
    public var renewalRate: RenewalRate
    var customers: [SimulatedCustomer]
    var families: [FamilyGroup]
    /// In creation order (ids are issued in increasing order), so restored indexes list them as before.
    var subscriptions: [SimulatedSubscription]
    /// In issue order.
    var transactions: [JWSTransactionDecodedPayload]
    var oneTimeCustomer: [String: String]
    var nextTransactionNumber: Int64
    var nextWebOrderNumber: Int64

    /// The customers' ids, sorted.
    public var customerIds: [String] { customers.map(\.id).sorted() }
    /// Every transaction id issued, in issue order.
    public var transactionIds: [String] { transactions.compactMap(\.transactionId) }
}

extension SimulatedStore {
    /// The store's state at virtual time `now`.
    func state(now: Int64) -> SimulatorState {
        SimulatorState(
            version: SimulatorState.currentVersion, now: now, catalog: catalog, environment: environment.rawValue,
            renewalRate: renewalRate, customers: customers.values.sorted { $0.id < $1.id },
            families: families.values.sorted { $0.id < $1.id },
            subscriptions: subscriptions.values.sorted {
                ($0.originalTransactionId.count, $0.originalTransactionId) < ($1.originalTransactionId.count, $1.originalTransactionId)
            },
            transactions: transactionOrder.compactMap { transactions[$0] }, oneTimeCustomer: oneTimeCustomer,
            nextTransactionNumber: nextTransactionNumber, nextWebOrderNumber: nextWebOrderNumber)
    }

    /// A store continuing from `state`.
    init(restoring state: SimulatorState) throws(SimulatorError) {
        guard state.version == SimulatorState.currentVersion else {
            throw SimulatorError(code: "INVALID_STATE", "saved simulator state version \(state.version) is not \(SimulatorState.currentVersion)")
        }
        self.init(catalog: state.catalog, environment: AppStoreEnvironment(rawValue: state.environment))
        renewalRate = state.renewalRate
        for customer in state.customers { customers[customer.id] = customer }
        for family in state.families { families[family.id] = family }
        for subscription in state.subscriptions { subscriptions[subscription.originalTransactionId] = subscription }
        for transaction in state.transactions {
            guard let id = transaction.transactionId else { continue }
            transactions[id] = transaction
            transactionOrder.append(id)
        }
        oneTimeCustomer = state.oneTimeCustomer
        nextTransactionNumber = state.nextTransactionNumber
        nextWebOrderNumber = state.nextWebOrderNumber
    }
}

extension Simulator {
    /// The state to save, at the virtual now.
    public func savedState() -> SimulatorState { store.state(now: clock.nowMilliseconds()) }

    /// Continues from a saved state: the store is replaced and the clock moved to its time (never
    /// backwards).
    public func restore(_ state: SimulatorState) throws(SimulatorError) {
        store = try SimulatedStore(restoring: state)
        clock.set(milliseconds: state.now)
    }
}
