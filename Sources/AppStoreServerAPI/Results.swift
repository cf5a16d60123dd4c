import AppStore

/// One page of Get Transaction History or Get Refund History, every transaction verified.
public struct TransactionPage: Sendable {
    public var transactions: [Signed<JWSTransactionDecodedPayload>]
    /// Pass back as `revision` for the next page.
    public var revision: String?
    public var hasMore: Bool
    /// The environment that answered (Sandbox after a fallback); ask it for the next page.
    public var environment: AppStoreEnvironment
}

/// Get All Subscription Statuses, every signed payload verified.
public struct SubscriptionStatuses: Sendable {
    /// One subscription: its status and latest transaction and renewal info.
    public struct Subscription: Sendable {
        public var subscriptionGroupIdentifier: String?
        public var originalTransactionId: String?
        public var status: SubscriptionStatus?
        public var transaction: Signed<JWSTransactionDecodedPayload>?
        public var renewalInfo: Signed<JWSRenewalInfoDecodedPayload>?
    }

    public var subscriptions: [Subscription]
    /// The environment that answered.
    public var environment: AppStoreEnvironment
}

/// Look Up Order ID: status `valid` with the order's transactions, or `invalid` and none.
public struct OrderLookup: Sendable {
    public var status: OrderLookupStatus?
    public var transactions: [Signed<JWSTransactionDecodedPayload>]
    /// The environment that answered.
    public var environment: AppStoreEnvironment
}

/// One past notification from Get Notification History or Get Test Notification Status.
public struct HistoricalNotification: Sendable {
    /// The notification as Apple sent it; `jws` is the `signedPayload` to ingest.
    public var notification: Signed<ResponseBodyV2DecodedPayload>
    /// Apple's delivery attempts to the app's server URL.
    public var sendAttempts: [SendAttemptItem]
}

/// A history item whose signed payload did not verify (or was missing: then `signedPayload` is empty).
public struct UnverifiedNotification: Sendable {
    public var signedPayload: String
    /// Why it was not used.
    public var error: ServerAPIError
}

/// One page of Get Notification History.
public struct NotificationHistoryPage: Sendable {
    /// The items that verified, in Apple's order.
    public var notifications: [HistoricalNotification]
    /// The items that did not: one bad item does not spoil the page.
    public var unverified: [UnverifiedNotification]
    /// Pass back for the next page; nil on the last page.
    public var paginationToken: String?
    public var hasMore: Bool
}

/// The filters of Get Transaction History (all optional).
public struct TransactionHistoryQuery: Sendable, Hashable {
    /// Apple's `productType` query values.
    public enum ProductType: String, Sendable, Hashable {
        case autoRenewable = "AUTO_RENEWABLE"
        case nonRenewable = "NON_RENEWABLE"
        case consumable = "CONSUMABLE"
        case nonConsumable = "NON_CONSUMABLE"
    }

    /// Epoch milliseconds.
    public var startDate: Int64?
    public var endDate: Int64?
    public var productIds: [String]
    public var productTypes: [ProductType]
    /// Newest first instead of oldest first.
    public var descending: Bool
    public var subscriptionGroupIdentifiers: [String]
    public var inAppOwnershipType: InAppOwnershipType?
    /// Only revoked (true) or only unrevoked (false) transactions.
    public var revoked: Bool?

    public init(
        startDate: Int64? = nil, endDate: Int64? = nil, productIds: [String] = [], productTypes: [ProductType] = [],
        descending: Bool = false, subscriptionGroupIdentifiers: [String] = [], inAppOwnershipType: InAppOwnershipType? = nil,
        revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.descending = descending
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// Query items in Apple's spelling (lists repeat the key).
    var items: [(String, String)] {
        var out: [(String, String)] = []
        if let startDate { out.append(("startDate", String(startDate))) }
        if let endDate { out.append(("endDate", String(endDate))) }
        out += productIds.map { ("productId", $0) }
        out += productTypes.map { ("productType", $0.rawValue) }
        out.append(("sort", descending ? "DESCENDING" : "ASCENDING"))
        out += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { out.append(("inAppOwnershipType", inAppOwnershipType.rawValue)) }
        if let revoked { out.append(("revoked", revoked ? "true" : "false")) }
        return out
    }
}
