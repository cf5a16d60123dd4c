/// A one-time product purchase as `purchases.products.get` answers it.
///
/// The v1 resource writes its states as integers and its times as millisecond strings.
public struct ProductPurchase: Sendable, Hashable, Codable {
    /// `androidpublisher#productPurchase`.
    public var kind: String?
    public var purchaseTimeMillis: Int64String?
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    public var developerPayload: String?
    public var orderId: String?
    /// Absent for a normal purchase; 0 test (license tester), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    public var purchaseToken: String?
    public var productId: String?
    public var quantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var obfuscatedExternalProfileId: String?
    public var regionCode: String?
    public var refundableQuantity: Int?

    public init(
        kind: String? = "androidpublisher#productPurchase", purchaseTimeMillis: Int64?, purchaseState: Int?, consumptionState: Int?,
        orderId: String?, purchaseType: Int? = nil, acknowledgementState: Int?, purchaseToken: String? = nil,
        productId: String? = nil, quantity: Int? = nil, obfuscatedExternalAccountId: String? = nil,
        obfuscatedExternalProfileId: String? = nil, regionCode: String? = nil, refundableQuantity: Int? = nil
    ) {
        self.kind = kind
        self.purchaseTimeMillis = purchaseTimeMillis.map(Int64String.init)
        self.purchaseState = purchaseState
        self.consumptionState = consumptionState
        self.orderId = orderId
        self.purchaseType = purchaseType
        self.acknowledgementState = acknowledgementState
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.quantity = quantity
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.regionCode = regionCode
        self.refundableQuantity = refundableQuantity
    }

    /// The largest answer accepted.
    public static let maximumBytes = 64 * 1024

    public var isPurchased: Bool { purchaseState == 0 }
    public var isCanceled: Bool { purchaseState == 1 }
    public var isPending: Bool { purchaseState == 2 }
    public var isConsumed: Bool { consumptionState == 1 }
    public var isAcknowledged: Bool { acknowledgementState == 1 }
    public var isTestPurchase: Bool { purchaseType == 0 }
}

/// One page of `purchases.voidedpurchases.list`.
public struct VoidedPurchasesListResponse: Sendable, Hashable, Codable {
    public var pageInfo: PageInfo?
    public var tokenPagination: TokenPagination?
    public var voidedPurchases: [VoidedPurchase]?

    public init(pageInfo: PageInfo? = nil, tokenPagination: TokenPagination? = nil, voidedPurchases: [VoidedPurchase]?) {
        self.pageInfo = pageInfo
        self.tokenPagination = tokenPagination
        self.voidedPurchases = voidedPurchases
    }

    /// The largest page accepted (1000 entries of a few hundred bytes each).
    public static let maximumBytes = 2 * 1024 * 1024

    public struct PageInfo: Sendable, Hashable, Codable {
        public var totalResults: Int?
        public var resultPerPage: Int?
        public var startIndex: Int?
        public init(totalResults: Int? = nil, resultPerPage: Int? = nil, startIndex: Int? = nil) {
            self.totalResults = totalResults
            self.resultPerPage = resultPerPage
            self.startIndex = startIndex
        }
    }

    public struct TokenPagination: Sendable, Hashable, Codable {
        public var nextPageToken: String?
        public var previousPageToken: String?
        public init(nextPageToken: String?, previousPageToken: String? = nil) {
            self.nextPageToken = nextPageToken
            self.previousPageToken = previousPageToken
        }
    }
}

/// A purchase that was refunded, charged back or revoked.
public struct VoidedPurchase: Sendable, Hashable, Codable {
    /// `androidpublisher#voidedPurchase`.
    public var kind: String?
    public var purchaseToken: String
    public var purchaseTimeMillis: Int64String?
    public var voidedTimeMillis: Int64String?
    public var orderId: String?
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud,
    /// 6 friendly fraud, 7 chargeback, 8 unacknowledged purchase.
    public var voidedReason: Int?
    public var refundType: RefundType?
    public var voidedQuantity: Int?

    public init(
        kind: String? = "androidpublisher#voidedPurchase", purchaseToken: String, purchaseTimeMillis: Int64?, voidedTimeMillis: Int64?,
        orderId: String?, voidedSource: Int?, voidedReason: Int?, refundType: RefundType? = nil, voidedQuantity: Int? = nil
    ) {
        self.kind = kind
        self.purchaseToken = purchaseToken
        self.purchaseTimeMillis = purchaseTimeMillis.map(Int64String.init)
        self.voidedTimeMillis = voidedTimeMillis.map(Int64String.init)
        self.orderId = orderId
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.refundType = refundType
        self.voidedQuantity = voidedQuantity
    }
}
