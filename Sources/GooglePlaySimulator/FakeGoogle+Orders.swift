import GooglePlay

extension FakeGoogle {
    /// `orders.get`: the order `orderId` of `packageName` (a subscription's first order or one of
    /// its renewals, or a one-time purchase), charged the product's price (an introductory
    /// period its introductory price; a one-time product times the quantity),
    /// no tax, and Google's 15 % (subscriptions) or 30 % fee taken from the developer's revenue;
    /// nil when no purchase has that order.
    func order(_ orderId: String, packageName: String) -> Order? {
        state.withLock { state -> Order? in
            for (token, s) in state.subscriptions where s.packageName == packageName {
                let ids = [s.orderBase] + (0..<max(s.renewals, 0)).map { "\(s.orderBase)..\($0)" }
                guard let index = ids.firstIndex(of: orderId) else { continue }
                return Self.order(orderId, token: token, productId: s.productId, price: s.price(ofOrder: index), quantity: 1, feePercent: 15)
            }
            for (token, p) in state.productPurchases where p.packageName == packageName && p.orderId == orderId {
                let state = p.canceled ? "REFUNDED" : "PROCESSED"
                var order = Self.order(orderId, token: token, productId: p.productId, price: products[p.productId]?.price, quantity: p.quantity, feePercent: 30)
                order.state = state
                return order
            }
            return nil
        }
    }

    static func order(_ orderId: String, token: String, productId: String, price: Money?, quantity: Int, feePercent: Int64) -> Order {
        let unit = price.flatMap { p in p.milliunits.flatMap { m in p.currency.map { (m, $0) } } }
        let total = unit.map { Money(currencyCode: $0.1, milliunits: $0.0 * Int64(quantity)) }
        let revenue = unit.map { Money(currencyCode: $0.1, milliunits: $0.0 * Int64(quantity) * (100 - feePercent) / 100) }
        let tax = unit.map { Money(currencyCode: $0.1, milliunits: 0) }
        return Order(
            orderId: orderId, purchaseToken: token, state: "PROCESSED", total: total, tax: tax, developerRevenueInBuyerCurrency: revenue,
            lineItems: [OrderLineItem(productId: productId, listingPrice: price, total: total, tax: tax)])
    }
}
