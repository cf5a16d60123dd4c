import EntitledConfig
import Entitlements
import GooglePlay

// Google Play's Developer API answers → the engine's facts, field for field. The only decisions:
// which line item speaks for a subscription (the one expiring last), the environment (license
// testers' purchases are Sandbox), `observedAt` (when the answer came), and the price of the
// current period (``PlayPeriodPrice``, docs/google-play.md "Prices").

extension PlaySubscriptionFact {
    /// The snapshot of `purchase` (token `purchaseToken` of `packageName`) answered at `observedAt`.
    init(_ purchase: SubscriptionPurchaseV2, purchaseToken: String, packageName: String, observedAt: Int64) throws(MappingError) {
        let item = purchase.lineItems.max { a, b in
            let ea = a.expiryTime?.milliseconds ?? .min, eb = b.expiryTime?.milliseconds ?? .min
            return ea != eb ? ea < eb : a.productId > b.productId
        }
        guard let item, !item.productId.isEmpty else { throw MappingError(model: "SubscriptionPurchaseV2", field: "lineItems") }
        let charged = PlayPeriodPrice(item)
        self.init(
            purchaseToken: purchaseToken, linkedPurchaseToken: purchase.linkedPurchaseToken, packageName: packageName,
            productId: item.productId, basePlanId: item.offerDetails?.basePlanId, offerId: item.offerDetails?.offerId,
            state: purchase.subscriptionState, startTime: purchase.startTime?.milliseconds, expiryTime: item.expiryTime?.milliseconds,
            autoRenewEnabled: item.autoRenewingPlan.map { $0.autoRenewEnabled ?? true },
            renewsTo: item.deferredItemReplacement?.productId, autoResumeTime: purchase.pausedStateContext?.autoResumeTime?.milliseconds,
            latestOrderId: purchase.latestOrderId ?? item.latestSuccessfulOrderId,
            acknowledged: purchase.acknowledgementState == .acknowledged,
            obfuscatedExternalAccountId: purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId,
            regionCode: purchase.regionCode, observedAt: observedAt, environment: purchase.isTestPurchase ? .sandbox : .production,
            price: charged.price, currency: charged.currency, periodType: charged.periodType)
    }
}

/// What a subscription line item's current period was charged, from `offerPhase` and
/// `autoRenewingPlan.recurringPrice` (the base plan's price, without discounts):
///
/// | phase                                   | period type | price            |
/// |-----------------------------------------|-------------|------------------|
/// | `freeTrial`                             | trial       | 0                |
/// | `introductoryPrice`                     | intro       | unknown (nil)    |
/// | `basePrice`                             | normal      | `recurringPrice` |
/// | `prorationPeriod`                       | normal      | unknown (nil)    |
/// | none, no `offerId`                      | normal      | `recurringPrice` |
/// | none, with an `offerId`                 | unknown     | unknown (nil)    |
/// | `prepaidPlan` (no recurring price)      | as above    | unknown (nil)    |
///
/// An amount that is not exactly a whole number of milli-units, negative, beyond Int64, or in a
/// currency that is not an ISO 4217 code is no price: the purchase still maps, without one.
struct PlayPeriodPrice: Equatable {
    var price: Int64?
    var currency: String?
    var periodType: PeriodType?
    /// Google sent a `recurringPrice` that is no price (logged by the ingest, never stored).
    var ignoredAmount = false

    init(_ item: SubscriptionPurchaseLineItem) {
        let phase = item.offerPhase
        let recurring = item.autoRenewingPlan?.recurringPrice
        let amount = recurring?.milliunits.flatMap { $0 >= 0 ? $0 : nil }
        let currency = amount == nil ? nil : recurring?.currency
        ignoredAmount = recurring != nil && currency == nil
        if phase?.freeTrial != nil {
            periodType = .trial
            price = 0
            self.currency = recurring?.currency
        } else if phase?.introductoryPrice != nil {
            periodType = .intro
        } else if phase?.basePrice != nil || phase?.prorationPeriod != nil || (phase == nil && item.offerDetails?.offerId == nil) {
            periodType = .normal
            if phase?.prorationPeriod == nil, let currency, let amount {
                price = amount
                self.currency = currency
            }
        }
    }
}

extension PlayProductFact {
    /// The snapshot of a one-time purchase answered at `observedAt`.
    init(_ purchase: ProductPurchase, purchaseToken: String, packageName: String, productId: String, observedAt: Int64) throws(MappingError) {
        guard let state = purchase.purchaseState else { throw MappingError(model: "ProductPurchase", field: "purchaseState") }
        guard let time = purchase.purchaseTimeMillis?.value else { throw MappingError(model: "ProductPurchase", field: "purchaseTimeMillis") }
        self.init(
            purchaseToken: purchaseToken, packageName: packageName, productId: purchase.productId ?? productId, orderId: purchase.orderId,
            purchaseState: state, quantity: max(purchase.quantity ?? 1, 1), purchaseTime: time, consumed: purchase.isConsumed,
            acknowledged: purchase.isAcknowledged, obfuscatedExternalAccountId: purchase.obfuscatedExternalAccountId,
            regionCode: purchase.regionCode, observedAt: observedAt, environment: purchase.isTestPurchase ? .sandbox : .production,
            refundableQuantity: purchase.refundableQuantity)
    }
}

extension PlayOrderFact {
    /// What `order` (the Orders API's answer about `orderId`) charged: `total` less `tax`. Nil
    /// when that is no price: `total` absent, not an exact whole number of milli-units, negative,
    /// or not in an ISO 4217 currency, or a `tax` that is not an amount of the same currency at
    /// most the total.
    init?(
        _ order: Order, purchaseToken: String, orderId: String, packageName: String, purchaseTime: Int64, observedAt: Int64,
        environment: Environment
    ) {
        guard let total = order.total, let amount = total.milliunits, amount >= 0, let currency = total.currency else { return nil }
        var tax: Int64 = 0
        if let taxed = order.tax {
            guard let value = taxed.milliunits, value >= 0, value <= amount, value == 0 || taxed.currency == currency else { return nil }
            tax = value
        }
        self.init(
            purchaseToken: purchaseToken, orderId: orderId, packageName: packageName, price: amount - tax, currency: currency,
            purchaseTime: purchaseTime, observedAt: observedAt, environment: environment)
    }
}

extension PlayApp {
    /// The engine's policy for this app's products (base plans included).
    var policy: Policy {
        var products: [String: ProductPolicy] = [:]
        for product in self.products {
            let type: Entitlements.ProductType =
                switch product.type {
                case .autoRenewable: .autoRenewable
                case .nonConsumable: .nonConsumable
                case .consumable: .consumable
                }
            products[product.productId] = ProductPolicy(
                type: type, entitlements: product.entitlements, subscriptionGroup: product.subscriptionGroup,
                basePlans: product.basePlans)
        }
        return Policy(products: products)
    }

    /// The configured product `productId`.
    func product(_ productId: String) -> PlayProduct? { products.first { $0.productId == productId } }
}
