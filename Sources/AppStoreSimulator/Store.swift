import AppStore
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import struct Entitlements.TransactionReason
import Foundation

/// The simulated App Store's state and every action on it, as pure functions of the state and `now`.
///
/// Each action returns the notifications Apple would send for it, unsigned; ``Simulator`` signs and delivers
/// them. Time is always a parameter: nothing here reads a clock.
public struct SimulatedStore: Sendable {
    /// The app and its products.
    public var catalog: Catalog
    /// `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment
    /// Customers by id.
    public internal(set) var customers: [String: SimulatedCustomer] = [:]
    /// Family groups by id.
    public internal(set) var families: [String: FamilyGroup] = [:]
    /// Subscriptions by original transaction id.
    public internal(set) var subscriptions = SubscriptionTable()
    /// Every transaction by id, as last issued (revocation fields included).
    public internal(set) var transactions: [String: JWSTransactionDecodedPayload] = [:]
    /// Transaction ids in issue order.
    public internal(set) var transactionOrder: [String] = []
    /// Purchaser of each one-time transaction.
    public internal(set) var oneTimeCustomer: [String: String] = [:]
    var nextTransactionNumber: Int64 = 2_000_000_000_000_001
    var nextWebOrderNumber: Int64 = 1_000_000_000_000_001
    /// How fast subscription periods pass (Xcode and sandbox can accelerate renewals).
    public var renewalRate: RenewalRate = .realTime
    /// Billing retry lasts 60 days after the failed renewal.
    public static let billingRetryWindow: Int64 = 60 * Milliseconds.day

    /// An empty store selling `catalog`.
    public init(catalog: Catalog, environment: AppStoreEnvironment = .sandbox) {
        self.catalog = catalog
        self.environment = environment
    }

    /// When a subscription period of length `period` starting at `start` ends, at the current ``renewalRate``.
    public func end(of period: ISODuration, from start: Int64) -> Int64 {
        renewalRate.end(of: period, from: start)
    }

    // MARK: - Customers and families

    /// Adds (or updates) a customer.
    public mutating func addCustomer(_ id: String, storefront: String = "USA", paymentSucceeds: Bool = true) {
        if var existing = customers[id] {
            existing.storefront = storefront
            existing.paymentSucceeds = paymentSucceeds
            customers[id] = existing
        } else {
            customers[id] = SimulatedCustomer(id: id, storefront: storefront, paymentSucceeds: paymentSucceeds)
        }
    }

    func customer(_ id: String) throws(SimulatorError) -> SimulatedCustomer {
        guard let customer = customers[id] else { throw .unknown("customer", id) }
        return customer
    }

    func product(_ id: String) throws(SimulatorError) -> SimulatedProduct {
        guard let product = catalog.product(id) else { throw .unknown("product", id) }
        return product
    }

    /// Puts a product on sale or takes it off; subscriptions to a product off sale expire at their next
    /// renewal (`EXPIRED`/`PRODUCT_NOT_FOR_SALE`, `expirationIntent` 4). No notification now.
    public mutating func setAvailableForSale(_ productId: String, _ available: Bool) throws(SimulatorError) {
        guard let index = catalog.products.firstIndex(where: { $0.id == productId }) else { throw .unknown("product", productId) }
        catalog.products[index].availableForSale = available
    }

    /// Changes a customer's storefront; later transactions carry it. Apple sends no notification for this.
    public mutating func changeStorefront(_ customerId: String, to storefront: String) throws(SimulatorError) {
        var customer = try customer(customerId)
        customer.storefront = storefront
        customers[customerId] = customer
    }

    /// Sets (backfills) the app account token of an original transaction: the subscription's, or a
    /// one-time purchase's. Family-shared transactions are refused, as Apple does (4000185).
    public mutating func setAppAccountToken(originalTransactionId id: String, token: String) throws(SimulatorError) {
        guard UUID(uuidString: token) != nil else { throw SimulatorError(code: "INVALID_APP_ACCOUNT_TOKEN", "not a UUID") }
        if var sub = subscriptions[id] {
            guard !sub.isFamilyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared transaction") }
            sub.appAccountToken = token.lowercased()
            subscriptions[id] = sub
            return
        }
        guard var tx = transactions[id], tx.originalTransactionId == id else { throw .unknown("transaction", id) }
        guard tx.inAppOwnershipType != .familyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared transaction") }
        tx.appAccountToken = token.lowercased()
        transactions[id] = tx
    }

    /// The `TEST` notification (no signed transaction or renewal info).
    public func testNotification(now: Int64) -> PendingNotification {
        PendingNotification(type: .test, date: now)
    }

    // MARK: - Transactions and payloads

    mutating func takeTransactionId() -> String {
        defer { nextTransactionNumber += 1 }
        return String(nextTransactionNumber)
    }

    mutating func record(_ tx: JWSTransactionDecodedPayload) {
        guard let id = tx.transactionId else { return }
        if transactions[id] == nil { transactionOrder.append(id) }
        transactions[id] = tx
    }

    func baseTransaction(customer: SimulatedCustomer, product: SimulatedProduct, now: Int64) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            bundleId: catalog.bundleId, productId: product.id, subscriptionGroupIdentifier: product.group, quantity: 1,
            type: product.kind.productType, environment: environment, storefront: customer.storefront,
            storefrontId: Self.storefrontId(customer.storefront), transactionReason: .purchase, currency: product.currency,
            price: product.price)
    }

    /// A plausible numeric storefront id for an alpha-3 code (Apple's real ids are not derivable).
    static func storefrontId(_ storefront: String) -> String {
        ["USA": "143441", "GBR": "143444", "DEU": "143443", "FRA": "143442", "JPN": "143462", "CAN": "143455"][storefront]
            ?? "143441"
    }

    /// Issues the next transaction of subscription `id` for its current period.
    mutating func issueTransaction(
        for id: String, reason: TransactionReason, price: Int64, now: Int64, transactionId: String? = nil,
        purchaseDate: Int64? = nil
    ) -> JWSTransactionDecodedPayload? {
        guard var sub = subscriptions[id], let customer = customers[sub.customerId], let product = catalog.product(sub.productId)
        else { return nil }
        var tx = baseTransaction(customer: customer, product: product, now: now)
        let newId = transactionId ?? takeTransactionId()
        tx.transactionId = newId
        tx.originalTransactionId = sub.originalTransactionId
        tx.webOrderLineItemId = String(nextWebOrderNumber)
        nextWebOrderNumber += 1
        tx.purchaseDate = purchaseDate ?? (reason == .renewal ? now : sub.purchaseDate)
        tx.originalPurchaseDate = sub.originalPurchaseDate
        tx.expiresDate = sub.expiresDate
        tx.transactionReason = reason
        tx.price = price
        tx.appAccountToken = sub.appAccountToken
        tx.inAppOwnershipType = sub.isFamilyShared ? .familyShared : .purchased
        if let offer = sub.offer, !sub.isFamilyShared {
            tx.offerType = offer.type
            tx.offerIdentifier = offer.offer.id
            tx.offerDiscountType = offer.offer.discountType
            tx.offerPeriod = offer.offer.period.text
        }
        sub.latestTransactionId = newId
        subscriptions[id] = sub
        record(tx)
        return tx
    }

    /// The renewal info of subscription `id` as of now.
    public func renewalInfo(_ id: String) -> JWSRenewalInfoDecodedPayload? {
        guard let sub = subscriptions[id] else { return nil }
        let next = catalog.product(sub.autoRenewProductId)
        var info = JWSRenewalInfoDecodedPayload(
            originalTransactionId: sub.originalTransactionId, autoRenewProductId: sub.autoRenewProductId,
            productId: sub.productId, autoRenewStatus: sub.autoRenew ? .on : .off, environment: environment,
            recentSubscriptionStartDate: sub.recentStartDate, currency: next?.currency, appAccountToken: sub.appAccountToken)
        info.isInBillingRetryPeriod = sub.state == .billingRetry || sub.state == .gracePeriod
        info.gracePeriodExpiresDate = sub.state == .gracePeriod ? sub.gracePeriodExpires : nil
        if sub.state == .expired || sub.state == .billingRetry || sub.state == .gracePeriod {
            info.expirationIntent = sub.state == .expired ? sub.expirationIntent : .billingError
        }
        if sub.autoRenew, sub.state != .expired, sub.state != .revoked {
            info.renewalDate = sub.expiresDate
            var price = sub.priceIncrease?.newPrice ?? next?.price
            if let offer = sub.pendingOffer ?? (sub.offer.flatMap { $0.remainingPeriods > 0 ? $0 : nil }) {
                info.offerType = offer.type
                info.offerIdentifier = offer.offer.id
                info.offerDiscountType = offer.offer.discountType
                info.offerPeriod = offer.offer.period.text
                price = offer.offer.price
            }
            info.renewalPrice = price
        }
        if let increase = sub.priceIncrease {
            info.priceIncreaseStatus = increase.accepted == true ? .customerConsentedOrWasNotifiedWithoutNeedingConsent : .customerHasNotResponded
        }
        if sub.state == .expired, !sub.isFamilyShared, let next, !next.winBackOffers.isEmpty {
            info.eligibleWinBackOfferIds = next.winBackOffers.compactMap(\.id)
        }
        return info
    }

    func notification(
        _ type: NotificationType, _ subtype: NotificationSubtype?, subscription id: String,
        transaction: JWSTransactionDecodedPayload? = nil, now: Int64
    ) -> PendingNotification {
        // Every caller passes an id it just read from the table; a missing one still yields no trap.
        let sub = subscriptions[id]
        return PendingNotification(
            type: type, subtype: subtype, status: sub?.state.status,
            transaction: transaction ?? sub.flatMap { transactions[$0.latestTransactionId] }, renewalInfo: renewalInfo(id),
            customerId: sub?.customerId, date: now)
    }

    // MARK: - Lookups

    /// The customer's own (purchased, not family-shared) subscriptions, by original transaction id.
    public func subscriptionIds(of customerId: String) -> [String] {
        subscriptions.ids(of: customerId).filter { subscriptions[$0]?.isFamilyShared == false }.sorted()
    }

    /// The customer's purchased subscription in `group`, if any.
    func activeOrLatestSubscription(_ customerId: String, group: String) throws(SimulatorError) -> String? {
        _ = try customer(customerId)
        return subscriptions.ids(of: customerId).first {
            subscriptions[$0]?.groupId == group && subscriptions[$0]?.isFamilyShared == false
        }
    }

    func requireSubscription(_ customerId: String, _ productId: String) throws(SimulatorError) -> String {
        let product = try product(productId)
        guard product.kind == .autoRenewable, let group = product.group,
            let id = try activeOrLatestSubscription(customerId, group: group)
        else { throw .invalid("\(customerId) has no subscription in the group of \(productId)") }
        return id
    }
}
