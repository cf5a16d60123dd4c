import Entitlements

/// Google Play's order ids of the stored purchases (table `play_orders`): a pending refund review
/// names only the order, so the purchase (and through it the customer) is found here. Written by
/// the ledger as each Play purchase snapshot is stored.
public protocol PlayOrderStore: Sendable {
    /// The purchase of `orderId` in `packageName`: the order itself, else — a renewal order
    /// (`GPA.x..N`) the ledger never saw — another order of the same subscription (`GPA.x`).
    func playOrder(packageName: String, orderId: String) async throws -> PlayOrder?
}

/// A Play order the ledger stored.
public struct PlayOrder: Sendable, Hashable {
    public var orderId: String
    public var purchaseToken: String
    public var productId: String
    public var isSubscription: Bool

    public init(orderId: String, purchaseToken: String, productId: String, isSubscription: Bool) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.isSubscription = isSubscription
    }

    /// The order id without a renewal's `..N` suffix: the subscription's first order.
    public static func baseOrderId(_ orderId: String) -> String {
        guard let range = orderId.range(of: "..") else { return orderId }
        return String(orderId[..<range.lowerBound])
    }
}

extension PlayOrder {
    /// The order a Play purchase snapshot names (a subscription's `latestOrderId`, a one-time
    /// purchase's `orderId`); nil for any other fact or a snapshot naming none.
    init?(_ fact: Fact) {
        switch fact {
        case .playSubscription(let s):
            guard let id = s.latestOrderId, !id.isEmpty else { return nil }
            self.init(orderId: id, purchaseToken: s.purchaseToken, productId: s.productId, isSubscription: true)
        case .playProduct(let p):
            guard let id = p.orderId, !id.isEmpty else { return nil }
            self.init(orderId: id, purchaseToken: p.purchaseToken, productId: p.productId, isSubscription: false)
        default:
            return nil
        }
    }

    /// Records the order in `packageName` unless it is recorded (first writer wins: an order
    /// belongs to one purchase).
    func insert(packageName: String) -> SQLQuery {
        """
        INSERT INTO play_orders (package_name, order_id, base_order_id, purchase_token, product_id, is_subscription)
        VALUES (\(packageName), \(orderId), \(PlayOrder.baseOrderId(orderId)), \(purchaseToken), \(productId), \(isSubscription))
        ON CONFLICT (package_name, order_id) DO NOTHING
        """
    }
}

extension Ledger {
    /// Records the order ids of the Play purchases among `rows`.
    func recordPlayOrders(_ rows: [FactRow], packageName: String?) throws {
        for row in rows {
            guard let order = PlayOrder(row.fact) else { continue }
            try session.query(order.insert(packageName: packageName ?? ""))
        }
    }
}

extension SessionBackedStore {
    func playOrder(packageName: String, orderId: String) async throws -> PlayOrder? {
        try await read { session in
            try session.query(
                """
                SELECT order_id, purchase_token, product_id, is_subscription FROM play_orders
                WHERE package_name = \(packageName) AND (order_id = \(orderId) OR base_order_id = \(PlayOrder.baseOrderId(orderId)))
                ORDER BY CASE WHEN order_id = \(orderId) THEN 0 ELSE 1 END, order_id LIMIT 1
                """
            ).first.map { row in
                let columns = try row.decode(PlayOrderColumns.self)
                return PlayOrder(
                    orderId: columns.orderId, purchaseToken: columns.purchaseToken, productId: columns.productId,
                    isSubscription: columns.isSubscription)
            }
        }
    }
}

private struct PlayOrderColumns: Decodable {
    var orderId: String
    var purchaseToken: String
    var productId: String
    var isSubscription: Bool
}
