// The engine's records of one transaction and one renewal, and how each is built from the facts
// that carry it (V2 transactions, receipt entries, renewal info, pending renewals).

/// The winning version of one transaction, in the engine's terms.
struct Txn {
    var transactionId: String
    var originalTransactionId: String
    var productId: String
    var type: ProductType
    /// Group key for auto-renewables and non-renewing stacks.
    var group: String?
    var purchase: Int64
    var originalPurchase: Int64?
    var expires: Int64?
    /// The earliest `expiresDate` among the transaction's versions: its period before any
    /// renewal-date extension, which Apple does not count as paid service.
    var paidExpires: Int64?
    var quantity: Int
    var ownership: Ownership
    var signed: Int64
    /// `refunded` or `revoked` when access was taken back (never for an upgraded transaction).
    var revokedAs: EntitlementStatus?
    var upgraded: Bool
    /// When an upgrade ended this transaction (its `revocationDate` / `cancellation_date`).
    var upgradedAt: Int64?
    var period: PeriodType
    var freeTrial: Bool
    var environment: Environment
    var price: Int64?
    var currency: String?
    /// `storefront` and `storefrontId` (V2 only; receipts carry none).
    var storefront: String?
    var storefrontId: String?
    var isV1: Bool
    /// The App Store, or Google Play for a Play one-time product.
    var store: PurchaseStore = .appStore
    /// Units refunded by quantity-based partial refunds while some remain (Play one-time products).
    var refundedQuantity = 0
    /// Dense id of `originalTransactionId` (``Canon/chains``).
    var chain = 0
    /// Dense id of `group` (``Canon/groups``), when there is a group.
    var groupId = -1
}

/// The newest renewal info of one subscription.
struct Renewal {
    var originalTransactionId: String
    var productId: String
    var autoRenewProductId: String?
    var inRetry: Bool?
    var graceExpires: Int64?
    var priceIncrease: PriceIncrease?
    var signed: Int64
    var winBack: [String]
    var isV1: Bool
}

/// A notification's verdict on one transaction's revocation.
enum RevocationSignal: Int {
    case reinstated = 0
    case refunded = 1
    case revoked = 2
}

extension Txn {
    init(_ t: borrowing TransactionFact, product: ProductInfo) {
        transactionId = t.transactionId
        originalTransactionId = t.originalTransactionId
        productId = t.productId
        type = t.productType
        group = Txn.groupKey(type: t.productType, product: product, appleGroup: t.subscriptionGroupId, productId: t.productId)
        purchase = t.purchaseDate
        originalPurchase = t.originalPurchaseDate
        expires = t.expiresDate
        paidExpires = t.expiresDate
        quantity = t.quantity
        ownership = t.ownership
        signed = t.signedDate
        upgraded = t.isUpgraded
        upgradedAt = t.isUpgraded ? t.revocationDate : nil
        if t.revocationDate != nil && !t.isUpgraded {
            revokedAs = (t.revocationType == .familyRevoke || t.ownership == .familyShared) ? .revoked : .refunded
        } else {
            revokedAs = nil
        }
        freeTrial = t.offerDiscountType == .freeTrial
        period = t.periodType
        environment = t.environment
        price = t.price
        currency = t.currency
        storefront = t.storefront
        storefrontId = t.storefrontId
        isV1 = false
    }

    init(_ e: borrowing ReceiptEntryFact, product: ProductInfo) {
        let resolvedType = product.type ?? (e.expiresDate != nil ? .autoRenewable : .nonConsumable)
        transactionId = e.transactionId
        originalTransactionId = e.originalTransactionId
        productId = e.productId
        type = resolvedType
        group = Txn.groupKey(type: resolvedType, product: product, appleGroup: e.subscriptionGroupId, productId: e.productId)
        purchase = e.purchaseDate
        originalPurchase = e.originalPurchaseDate
        expires = e.expiresDate
        paidExpires = e.expiresDate
        quantity = e.quantity
        ownership = e.ownership
        signed = e.receiptDate
        upgraded = e.isUpgraded
        upgradedAt = e.isUpgraded ? e.cancellationDate : nil
        if e.cancellationDate != nil && !e.isUpgraded {
            revokedAs = e.ownership == .familyShared ? .revoked : .refunded
        } else {
            revokedAs = nil
        }
        freeTrial = e.isTrialPeriod
        if e.isTrialPeriod {
            period = .trial
        } else if e.isInIntroOfferPeriod {
            period = .intro
        } else if e.promotionalOfferId != nil {
            period = .promotional
        } else if e.offerCodeRefName != nil {
            period = .offerCode
        } else {
            period = .normal
        }
        environment = e.environment
        price = nil
        currency = nil
        storefront = nil
        storefrontId = nil
        isV1 = true
    }

    static func groupKey(type: ProductType, product: ProductInfo, appleGroup: String?, productId: String) -> String? {
        switch type {
        case .autoRenewable: return product.group ?? appleGroup ?? productId
        case .nonRenewing: return product.group ?? productId
        case .nonConsumable, .consumable: return nil
        }
    }

    mutating func apply(_ signal: RevocationSignal) {
        switch signal {
        case .reinstated:
            revokedAs = nil
        case .refunded, .revoked:
            guard !upgraded else { return }
            revokedAs = (signal == .revoked || ownership == .familyShared) ? .revoked : .refunded
        }
    }
}

extension Renewal {
    init(_ r: RenewalInfoFact) {
        originalTransactionId = r.originalTransactionId
        productId = r.productId
        autoRenewProductId = r.autoRenewProductId
        inRetry = r.isInBillingRetryPeriod
        graceExpires = r.gracePeriodExpiresDate
        priceIncrease = r.priceIncreaseStatus.map { $0 == 1 ? .accepted : .pending }
        signed = r.signedDate
        winBack = r.eligibleWinBackOfferIds
        isV1 = false
    }

    init(_ r: PendingRenewalFact) {
        originalTransactionId = r.originalTransactionId
        productId = r.productId
        autoRenewProductId = r.autoRenewProductId
        inRetry = r.isInBillingRetryPeriod
        graceExpires = r.gracePeriodExpiresDate
        let status = r.priceIncreaseStatus ?? r.priceConsentStatus
        priceIncrease = status.map { $0 == 1 ? .accepted : .pending }
        signed = r.receiptDate
        winBack = []
        isV1 = true
    }
}
