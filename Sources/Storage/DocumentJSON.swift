import Entitlements
import JSONCoding

/// A ``CustomerDocument`` written directly, byte for byte what `JSONEncoder` with `.sortedKeys`
/// writes for it through the types' synthesized `Encodable` conformances: each type's members in
/// sorted order, an absent optional left out, an enum or token as its raw value.
///
/// Every projection encodes its customer's document on the ledger's single writer thread, at the
/// commit and again at the held events' release, and the `Encodable` walk through keyed
/// containers was most of that cost. The conformances stay the definition (the plain path and
/// Foundation use them); `DocumentJSONTests` hold this writer to Foundation's bytes over generated
/// documents and a document with every member present.
enum DocumentJSON {
    /// The document's bytes; nil when it holds a value `JSONEncoder` refuses (a non-finite
    /// number), which the plain path then reports.
    static func encode(_ document: CustomerDocument) -> [UInt8]? {
        var out = JSONStream(capacity: 4096)
        out.beginObject()
        out.key("aliases")
        out.strings(document.aliases)
        out.key("appAccountToken")
        out.string(document.appAccountToken)
        out.key("appUserId")
        out.string(document.appUserId)
        if let environments = document.environments {
            out.key("environments")
            out.beginArray()
            for environment in environments { out.string(environment.rawValue) }
            out.endArray()
        }
        out.key("state")
        write(document.state, to: &out)
        out.endObject()
        return out.isValid ? out.bytes : nil
    }

    private static func write(_ state: CustomerState, to out: inout JSONStream) {
        out.beginObject()
        out.key("consumables")
        out.beginArray()
        for balance in state.consumables { write(balance, to: &out) }
        out.endArray()
        out.key("customerClass")
        out.string(state.customerClass.rawValue)
        out.key("entitlements")
        out.beginArray()
        for entitlement in state.entitlements { write(entitlement, to: &out) }
        out.endArray()
        out.key("environment")
        out.string(state.environment.rawValue)
        out.key("evaluatedAt")
        out.int(state.evaluatedAt)
        if let at = state.nextStatusChangeAt {
            out.key("nextStatusChangeAt")
            out.int(at)
        }
        out.key("nonConsumables")
        out.beginArray()
        for item in state.nonConsumables {
            out.beginObject()
            out.key("grant")
            write(item.grant, to: &out)
            out.key("owned")
            out.bool(item.owned)
            out.key("productId")
            out.string(item.productId)
            out.endObject()
        }
        out.endArray()
        out.key("nonRenewingSubscriptions")
        out.beginArray()
        for item in state.nonRenewingSubscriptions {
            out.beginObject()
            out.key("active")
            out.bool(item.active)
            if let expiresAt = item.expiresAt {
                out.key("expiresAt")
                out.int(expiresAt)
            }
            out.key("grant")
            write(item.grant, to: &out)
            out.key("id")
            out.string(item.id)
            out.key("transactionIds")
            out.strings(item.transactionIds)
            out.endObject()
        }
        out.endArray()
        out.key("offers")
        write(state.offers, to: &out)
        out.key("preorder")
        out.beginObject()
        if let date = state.preorder.appOriginalPurchaseDate {
            out.key("appOriginalPurchaseDate")
            out.int(date)
        }
        out.key("isPreordered")
        out.bool(state.preorder.isPreordered)
        if let date = state.preorder.preorderDate {
            out.key("preorderDate")
            out.int(date)
        }
        out.endObject()
        out.key("proceeds")
        out.beginArray()
        for estimate in state.proceeds { write(estimate, to: &out) }
        out.endArray()
        out.key("restoreBehavior")
        out.string(state.restoreBehavior.rawValue)
        if let storefront = state.storefront {
            out.key("storefront")
            out.beginObject()
            out.key("storefront")
            out.string(storefront.storefront)
            if let id = storefront.storefrontId {
                out.key("storefrontId")
                out.string(id)
            }
            out.key("transactionId")
            out.string(storefront.transactionId)
            out.endObject()
        }
        out.key("subscriptionGroups")
        out.beginArray()
        for group in state.subscriptionGroups { write(group, to: &out) }
        out.endArray()
        out.endObject()
    }

    private static func write(_ group: SubscriptionGroupState, to out: inout JSONStream) {
        out.beginObject()
        if let current = group.current {
            out.key("current")
            write(current, to: &out)
        }
        out.key("customerClass")
        out.string(group.customerClass.rawValue)
        out.key("id")
        out.string(group.id)
        out.key("introOfferEligible")
        out.bool(group.introOfferEligible)
        out.key("paidServiceDays")
        out.int(group.paidServiceDays)
        if let change = group.pendingChange {
            out.key("pendingChange")
            out.string(change.rawValue)
        }
        out.key("proceedsRate")
        out.double(group.proceedsRate)
        out.key("promotionalOfferEligible")
        out.bool(group.promotionalOfferEligible)
        out.key("winBackOfferIds")
        out.strings(group.winBackOfferIds)
        out.endObject()
    }

    private static func write(_ balance: ConsumableBalance, to out: inout JSONStream) {
        out.beginObject()
        out.key("balance")
        out.int(balance.balance)
        out.key("credited")
        out.int(balance.credited)
        out.key("debited")
        out.int(balance.debited)
        out.key("productId")
        out.string(balance.productId)
        out.key("refundedTransactionIds")
        out.strings(balance.refundedTransactionIds)
        out.key("spendKeys")
        out.strings(balance.spendKeys)
        out.key("spent")
        out.int(balance.spent)
        out.key("transactionIds")
        out.strings(balance.transactionIds)
        out.endObject()
    }

    private static func write(_ estimate: ProceedsEstimate, to out: inout JSONStream) {
        out.beginObject()
        if let currency = estimate.currency {
            out.key("currency")
            out.string(currency)
        }
        if let price = estimate.price {
            out.key("price")
            out.int(price)
        }
        if let proceeds = estimate.proceeds {
            out.key("proceeds")
            out.int(proceeds)
        }
        out.key("productId")
        out.string(estimate.productId)
        out.key("rate")
        out.double(estimate.rate)
        out.key("refunded")
        out.bool(estimate.refunded)
        out.key("transactionId")
        out.string(estimate.transactionId)
        out.endObject()
    }

    private static func write(_ offers: EligibleOffers, to out: inout JSONStream) {
        func references(_ references: [OfferReference], to out: inout JSONStream) {
            out.beginArray()
            for reference in references {
                out.beginObject()
                out.key("offerId")
                out.string(reference.offerId)
                out.key("productId")
                out.string(reference.productId)
                out.endObject()
            }
            out.endArray()
        }
        out.beginObject()
        out.key("introductory")
        out.strings(offers.introductory)
        out.key("promotional")
        references(offers.promotional, to: &out)
        out.key("winBack")
        references(offers.winBack, to: &out)
        out.endObject()
    }

    private static func write(_ grant: Grant, to out: inout JSONStream) {
        out.beginObject()
        writeGrantMembers(
            active: grant.active, billingIssueDetectedAt: grant.billingIssueDetectedAt, environment: grant.environment,
            expiresAt: grant.expiresAt, gracePeriodExpiresAt: grant.gracePeriodExpiresAt, grantId: nil, id: nil,
            originalPurchaseDate: grant.originalPurchaseDate, originalTransactionId: grant.originalTransactionId,
            ownership: grant.ownership, periodType: grant.periodType, priceIncrease: grant.priceIncrease, productId: grant.productId,
            productType: grant.productType, purchaseDate: grant.purchaseDate, renewsTo: grant.renewsTo, status: grant.status,
            store: grant.store, subscriptionGroup: grant.subscriptionGroup, transactionId: grant.transactionId,
            unsubscribeDetectedAt: grant.unsubscribeDetectedAt, willRenew: grant.willRenew, to: &out)
        out.endObject()
    }

    private static func write(_ entitlement: EntitlementState, to out: inout JSONStream) {
        out.beginObject()
        writeGrantMembers(
            active: entitlement.active, billingIssueDetectedAt: entitlement.billingIssueDetectedAt,
            environment: entitlement.environment, expiresAt: entitlement.expiresAt,
            gracePeriodExpiresAt: entitlement.gracePeriodExpiresAt, grantId: entitlement.grantId, id: entitlement.id,
            originalPurchaseDate: entitlement.originalPurchaseDate, originalTransactionId: entitlement.originalTransactionId,
            ownership: entitlement.ownership, periodType: entitlement.periodType, priceIncrease: entitlement.priceIncrease,
            productId: entitlement.productId, productType: entitlement.productType, purchaseDate: entitlement.purchaseDate,
            renewsTo: entitlement.renewsTo, status: entitlement.status, store: entitlement.store,
            subscriptionGroup: entitlement.subscriptionGroup, transactionId: entitlement.transactionId,
            unsubscribeDetectedAt: entitlement.unsubscribeDetectedAt, willRenew: entitlement.willRenew, to: &out)
        out.endObject()
    }

    /// The members a ``Grant`` and an ``EntitlementState`` share, in sorted order, with the
    /// entitlement's own (`grantId`, `id`) where they sort; nil ones left out, as the synthesized
    /// conformances leave them (`store` is optional in an entitlement only).
    private static func writeGrantMembers(
        active: Bool, billingIssueDetectedAt: Int64?, environment: Environment, expiresAt: Int64?, gracePeriodExpiresAt: Int64?,
        grantId: String?, id: String?, originalPurchaseDate: Int64?, originalTransactionId: String, ownership: Ownership,
        periodType: PeriodType, priceIncrease: PriceIncrease?, productId: String, productType: ProductType, purchaseDate: Int64,
        renewsTo: String?, status: EntitlementStatus, store: PurchaseStore?, subscriptionGroup: String?, transactionId: String,
        unsubscribeDetectedAt: Int64?, willRenew: Bool?, to out: inout JSONStream
    ) {
        out.key("active")
        out.bool(active)
        if let billingIssueDetectedAt {
            out.key("billingIssueDetectedAt")
            out.int(billingIssueDetectedAt)
        }
        out.key("environment")
        out.string(environment.rawValue)
        if let expiresAt {
            out.key("expiresAt")
            out.int(expiresAt)
        }
        if let gracePeriodExpiresAt {
            out.key("gracePeriodExpiresAt")
            out.int(gracePeriodExpiresAt)
        }
        if let grantId {
            out.key("grantId")
            out.string(grantId)
        }
        if let id {
            out.key("id")
            out.string(id)
        }
        if let originalPurchaseDate {
            out.key("originalPurchaseDate")
            out.int(originalPurchaseDate)
        }
        out.key("originalTransactionId")
        out.string(originalTransactionId)
        out.key("ownership")
        out.string(ownership.rawValue)
        out.key("periodType")
        out.string(periodType.rawValue)
        if let priceIncrease {
            out.key("priceIncrease")
            out.string(priceIncrease.rawValue)
        }
        out.key("productId")
        out.string(productId)
        out.key("productType")
        out.string(productType.rawValue)
        out.key("purchaseDate")
        out.int(purchaseDate)
        if let renewsTo {
            out.key("renewsTo")
            out.string(renewsTo)
        }
        out.key("status")
        out.string(status.rawValue)
        if let store {
            out.key("store")
            out.string(store.rawValue)
        }
        if let subscriptionGroup {
            out.key("subscriptionGroup")
            out.string(subscriptionGroup)
        }
        out.key("transactionId")
        out.string(transactionId)
        if let unsubscribeDetectedAt {
            out.key("unsubscribeDetectedAt")
            out.int(unsubscribeDetectedAt)
        }
        if let willRenew {
            out.key("willRenew")
            out.bool(willRenew)
        }
    }
}
