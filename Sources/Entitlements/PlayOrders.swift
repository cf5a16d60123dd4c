// Prices of Google Play orders from the Orders API (`orders.get`). A subscription snapshot says
// what the current order was charged only at the base price (`recurringPrice`) or in a free
// trial; an introductory or proration phase, and every one-time product purchase, say nothing.
// The server asks the Orders API about those orders after the purchase is stored and keeps each
// answer as a fact of its own, which prices the order's period (PlayPeriods.swift) whenever it
// arrived: the rollups are a function of the stored facts, not of the order they came in.

/// What one Play order was charged, as the Orders API answered (`orders.get`).
public struct PlayOrderFact: Hashable, Sendable, Codable {
    public var purchaseToken: String
    public var orderId: String
    public var packageName: String
    /// What the buyer paid for the order, tax excluded (`total` less `tax`), in milli-units of
    /// `currency`: for all units of a multi-quantity purchase.
    public var price: Int64
    /// ISO 4217 code of `total`.
    public var currency: String
    /// When the purchase the order belongs to began (the subscription's `startTime`, the one-time
    /// purchase's `purchaseTimeMillis`): the fact is dated by it, so that a rollup recomputed from
    /// a fact's date on reaches every day the order's price counts in.
    public var purchaseTime: Int64
    /// When the Orders API gave this answer (the server's clock).
    public var observedAt: Int64
    public var environment: Environment

    public init(
        purchaseToken: String, orderId: String, packageName: String, price: Int64, currency: String, purchaseTime: Int64,
        observedAt: Int64, environment: Environment = .production
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.packageName = packageName
        self.price = price
        self.currency = currency
        self.purchaseTime = purchaseTime
        self.observedAt = observedAt
        self.environment = environment
    }

    var orderKey: [OrderKey] {
        [
            key(observedAt), key(purchaseToken), key(orderId), key(packageName), key(price), key(currency), key(purchaseTime),
            key(environment),
        ]
    }
}

/// The price of each Play order the facts hold an Orders API answer for: of several answers about
/// one order, the newest (then the greatest by content), so that arrival order does not matter.
func playOrderPrices(_ facts: [Fact]) -> [PlayOrderKey: PlayOrderFact] {
    var prices: [PlayOrderKey: PlayOrderFact] = [:]
    for case .playOrder(let o) in facts {
        let k = PlayOrderKey(token: o.purchaseToken, orderId: o.orderId)
        if let held = prices[k], held.observedAt > o.observedAt || (held.observedAt == o.observedAt && !contentAfter(o.orderKey, held.orderKey)) {
            continue
        }
        prices[k] = o
    }
    return prices
}

extension PlayProductRefunds {
    /// The refunds by quantity of a purchase that cost `price` (milli-units, all units), each when
    /// it became known and by how much: the proportional share of the units it refunded, so that
    /// they add up to ``refundedAmount(ofPrice:)`` of the units refunded by quantity.
    public func partialRefundAmounts(ofPrice price: Int64) -> [(at: Int64, amount: Int64)] {
        var refunded = 0
        var taken: Int64 = 0
        return steps.map { step in
            refunded += step.quantity
            let upTo = PlayProductRefunds.share(of: price, units: refunded, quantity: quantity)
            defer { taken = upTo }
            return (step.at, upTo - taken)
        }
    }

    /// `price` × `units` ÷ `quantity`, rounded down, without overflow.
    static func share(of price: Int64, units: Int, quantity: Int) -> Int64 {
        let (whole, rest) = price.quotientAndRemainder(dividingBy: Int64(quantity))
        // rest × units / quantity < units: exact in full width, never overflowing.
        let product = rest.multipliedFullWidth(by: Int64(units))
        return whole * Int64(units) + Int64(quantity).dividingFullWidth(product).quotient
    }
}
