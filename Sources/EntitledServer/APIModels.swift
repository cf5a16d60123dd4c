import EntitledConfig
import Entitlements
import Foundation
import HTTPServer
import Storage

// The HTTP API's own DTOs (design principle 6): camelCase JSON, dates as ISO 8601 UTC with
// milliseconds, optional fields written as `null` rather than left out so clients see one shape.

/// Writes every optional as a value or `null`.
struct NullEncoding<Key: CodingKey> {
    var container: KeyedEncodingContainer<Key>

    mutating func put<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value { try container.encode(value, forKey: key) } else { try container.encodeNil(forKey: key) }
    }

    mutating func date(_ milliseconds: Int64?, _ key: Key) throws {
        try put(milliseconds.map(ISO8601.format(milliseconds:)), key)
    }
}

/// One entitlement in a customer answer (`entitlements.<id>`).
public struct EntitlementBody: Encodable, Sendable, Equatable {
    public var state: EntitlementState

    public init(_ state: EntitlementState) { self.state = state }

    /// The members of an entitlement (``AnswerShape/entitlement``); a grant's are all but `source`
    /// and `grantId` (``AnswerShape/grant``).
    enum Key: String, CodingKey, CaseIterable {
        case active, status, productId, productType, transactionId, originalTransactionId, ownership, purchaseDate
        case originalPurchaseDate, expiresAt, gracePeriodExpiresAt, willRenew, renewsTo, periodType
        case billingIssueDetectedAt, unsubscribeDetectedAt, priceIncrease, subscriptionGroup, environment, store
        case source, grantId
    }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let s = state
        try c.put(s.source.rawValue, .source)
        try c.put(s.grantId, .grantId)
        try c.put(s.active, .active)
        try c.put(s.status.rawValue, .status)
        try c.put(s.productId, .productId)
        try c.put(s.productType.rawValue, .productType)
        try c.put(s.transactionId, .transactionId)
        try c.put(s.originalTransactionId, .originalTransactionId)
        try c.put(s.ownership.rawValue, .ownership)
        try c.date(s.purchaseDate, .purchaseDate)
        try c.date(s.originalPurchaseDate, .originalPurchaseDate)
        try c.date(s.expiresAt, .expiresAt)
        try c.date(s.gracePeriodExpiresAt, .gracePeriodExpiresAt)
        try c.put(s.willRenew, .willRenew)
        try c.put(s.renewsTo, .renewsTo)
        try c.put(s.periodType.rawValue, .periodType)
        try c.date(s.billingIssueDetectedAt, .billingIssueDetectedAt)
        try c.date(s.unsubscribeDetectedAt, .unsubscribeDetectedAt)
        try c.put(s.priceIncrease?.rawValue, .priceIncrease)
        try c.put(s.subscriptionGroup, .subscriptionGroup)
        try c.put(s.environment.rawValue, .environment)
        try c.put(s.store?.rawValue, .store)
    }
}

/// A grant (a subscription's current period, a non-consumable, a run of non-renewing purchases).
public struct GrantBody: Encodable, Sendable, Equatable {
    public var grant: Grant

    public init(_ grant: Grant) { self.grant = grant }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: EntitlementBody.Key.self))
        let g = grant
        try c.put(g.active, .active)
        try c.put(g.status.rawValue, .status)
        try c.put(g.productId, .productId)
        try c.put(g.productType.rawValue, .productType)
        try c.put(g.transactionId, .transactionId)
        try c.put(g.originalTransactionId, .originalTransactionId)
        try c.put(g.ownership.rawValue, .ownership)
        try c.date(g.purchaseDate, .purchaseDate)
        try c.date(g.originalPurchaseDate, .originalPurchaseDate)
        try c.date(g.expiresAt, .expiresAt)
        try c.date(g.gracePeriodExpiresAt, .gracePeriodExpiresAt)
        try c.put(g.willRenew, .willRenew)
        try c.put(g.renewsTo, .renewsTo)
        try c.put(g.periodType.rawValue, .periodType)
        try c.date(g.billingIssueDetectedAt, .billingIssueDetectedAt)
        try c.date(g.unsubscribeDetectedAt, .unsubscribeDetectedAt)
        try c.put(g.priceIncrease?.rawValue, .priceIncrease)
        try c.put(g.subscriptionGroup, .subscriptionGroup)
        try c.put(g.environment.rawValue, .environment)
        try c.put(g.store.rawValue, .store)
    }
}

/// One subscription group in `subscriptions[]`: its class and its current subscription.
public struct SubscriptionBody: Encodable, Sendable, Equatable {
    public var group: SubscriptionGroupState

    public init(_ group: SubscriptionGroupState) { self.group = group }

    enum Key: String, CodingKey, CaseIterable {
        case subscriptionGroup, state, current, pendingChange, paidServiceDays, proceedsRate, winBackOfferIds, environment
    }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(group.id, .subscriptionGroup)
        // The environment of its current subscription (answers merge several; each group says its own).
        try c.put(group.current?.environment.rawValue, .environment)
        try c.put(group.customerClass.rawValue, .state)
        try c.put(group.current.map(GrantBody.init), .current)
        try c.put(group.pendingChange?.rawValue, .pendingChange)
        try c.put(group.paidServiceDays, .paidServiceDays)
        try c.put(group.proceedsRate, .proceedsRate)
        try c.put(group.winBackOfferIds, .winBackOfferIds)
    }
}

/// One entry of `nonSubscriptions[]`: a non-consumable, a run of non-renewing purchases, or a consumable balance.
public struct NonSubscriptionBody: Encodable, Sendable, Equatable {
    public enum Kind: String, Sendable { case nonConsumable, nonRenewing, consumable }

    public var kind: Kind
    public var id: String
    public var active: Bool
    public var expiresAt: Int64?
    public var balance: Int?
    /// A consumable's units purchased, refunded and spent (`balance = purchased − refunded − spent`);
    /// null for other kinds.
    public var purchased: Int? = nil
    public var refunded: Int? = nil
    public var spent: Int? = nil
    public var transactionIds: [String]
    public var grant: Grant?

    enum Key: String, CodingKey, CaseIterable { case kind, id, active, expiresAt, balance, purchased, refunded, spent, transactionIds, grant }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(kind.rawValue, .kind)
        try c.put(id, .id)
        try c.put(active, .active)
        try c.date(expiresAt, .expiresAt)
        try c.put(balance, .balance)
        try c.put(purchased, .purchased)
        try c.put(refunded, .refunded)
        try c.put(spent, .spent)
        try c.put(transactionIds, .transactionIds)
        try c.put(grant.map(GrantBody.init), .grant)
    }
}

/// `offers`: the configured offers the customer is eligible for now (the engine's ``EligibleOffers``):
/// `introductory` lists productIds, `winBack` and `promotional` list `{productId, offerId}`.
public typealias OffersBody = EligibleOffers

/// `GET /v1/customers/{appUserId}` (and the answer of `POST …/transactions`).
public struct CustomerBody: Encodable, Sendable, Equatable {
    public var appUserId: String
    /// The customer's other ids (aliases, or the id asked was merged into), sorted.
    public var aliases: [String]
    public var appAccountToken: String
    public var environment: String
    /// `new`, `active` or `inactive`.
    public var state: String
    public var serverTime: Int64
    public var entitlements: [String: EntitlementBody]
    public var subscriptions: [SubscriptionBody]
    public var nonSubscriptions: [NonSubscriptionBody]
    public var offers: OffersBody
    public var preorder: PreorderState
    /// The storefront (ISO 3166-1 alpha-3) and Apple's storefront id of the customer's latest
    /// transaction that names one; null when none does.
    public var storefront: String?
    public var storefrontId: String?
    /// The next instant at which time alone changes this answer (an expiry or grace end).
    public var nextChangeAt: Int64?

    /// Builds the body from a customer, their state and the server's `now`.
    public init(customer: CustomerRecord, state: CustomerState, now: Int64) {
        appUserId = customer.appUserId
        aliases = customer.aliases
        appAccountToken = customer.appAccountToken
        environment = state.environment.rawValue
        self.state = state.customerClass.rawValue
        serverTime = now
        var entitlements: [String: EntitlementBody] = [:]
        for entitlement in state.entitlements { entitlements[entitlement.id] = EntitlementBody(entitlement) }
        self.entitlements = entitlements
        subscriptions = state.subscriptionGroups.filter { $0.current != nil }.map(SubscriptionBody.init)
        var others: [NonSubscriptionBody] = []
        for item in state.nonConsumables {
            others.append(
                NonSubscriptionBody(
                    kind: .nonConsumable, id: item.productId, active: item.owned, expiresAt: nil, balance: nil,
                    transactionIds: [item.grant.transactionId], grant: item.grant))
        }
        for item in state.nonRenewingSubscriptions {
            others.append(
                NonSubscriptionBody(
                    kind: .nonRenewing, id: item.id, active: item.active, expiresAt: item.expiresAt, balance: nil,
                    transactionIds: item.transactionIds, grant: item.grant))
        }
        for item in state.consumables {
            others.append(
                NonSubscriptionBody(
                    kind: .consumable, id: item.productId, active: item.balance > 0, expiresAt: nil, balance: item.balance,
                    purchased: item.credited, refunded: item.debited, spent: item.spent,
                    transactionIds: item.transactionIds, grant: nil))
        }
        nonSubscriptions = others
        offers = state.offers
        preorder = state.preorder
        storefront = state.storefront?.storefront
        storefrontId = state.storefront?.storefrontId
        nextChangeAt = state.nextStatusChangeAt
    }

    enum Key: String, CodingKey, CaseIterable {
        case appUserId, appAccountToken, environment, state, serverTime, entitlements, subscriptions, nonSubscriptions
        case offers, preorder, storefront, storefrontId, nextChangeAt, aliases
    }

    enum PreorderKey: String, CodingKey, CaseIterable { case isPreordered, preorderDate, appOriginalPurchaseDate }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        // An unlinked subscription's placeholder (an event's answer) names nobody.
        let unlinked = UnlinkedSubscription.isKey(appUserId)
        try c.put(unlinked ? nil : appUserId, .appUserId)
        try c.put(aliases, .aliases)
        try c.put(unlinked ? nil : appAccountToken, .appAccountToken)
        try c.put(environment, .environment)
        try c.put(state, .state)
        try c.date(serverTime, .serverTime)
        try c.put(entitlements, .entitlements)
        try c.put(subscriptions, .subscriptions)
        try c.put(nonSubscriptions, .nonSubscriptions)
        try c.put(offers, .offers)
        var p = NullEncoding(container: c.container.nestedContainer(keyedBy: PreorderKey.self, forKey: .preorder))
        try p.put(preorder.isPreordered, .isPreordered)
        try p.date(preorder.preorderDate, .preorderDate)
        try p.date(preorder.appOriginalPurchaseDate, .appOriginalPurchaseDate)
        try c.put(storefront, .storefront)
        try c.put(storefrontId, .storefrontId)
        try c.date(nextChangeAt, .nextChangeAt)
    }

    /// `max-age` for `Cache-Control: private, max-age=N`: at most `ttl`, and at most the whole
    /// seconds until the state's next scheduled change (so no cache outlives an expiry).
    public static func maxAge(nextChangeAt: Int64?, now: Int64, ttl: Int) -> Int {
        guard let next = nextChangeAt else { return max(0, ttl) }
        let seconds = max(0, (next - now) / 1000)
        return Int(min(Int64(max(0, ttl)), seconds))
    }
}

/// One item of `GET /v1/customers/{appUserId}/history`.
public struct HistoryItemBody: Encodable, Sendable, Equatable {
    public var entry: LedgerHistoryEntry

    public init(_ entry: LedgerHistoryEntry) { self.entry = entry }

    enum Key: String, CodingKey {
        case id, kind, type, subtype, occurredAt, receivedAt, environment, productId, transactionId
        case originalTransactionId, price, currency, quantity, idempotencyKey
    }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(entry.id, .id)
        try c.put(entry.kind.rawValue, .kind)
        try c.put(entry.type, .type)
        try c.put(entry.subtype, .subtype)
        try c.date(entry.occurredAt, .occurredAt)
        try c.date(entry.receivedAt, .receivedAt)
        try c.put(entry.environment.rawValue, .environment)
        try c.put(entry.productId, .productId)
        try c.put(entry.transactionId, .transactionId)
        try c.put(entry.originalTransactionId, .originalTransactionId)
        try c.put(entry.price, .price)
        try c.put(entry.currency, .currency)
        // Only spends have these; other entries keep their shape.
        if entry.kind == .consumableSpend {
            try c.put(entry.quantity, .quantity)
            try c.put(entry.idempotencyKey, .idempotencyKey)
        }
    }
}

/// A page of history: `items` newest first; `nextCursor` (opaque) is null on the last page.
public struct HistoryPageBody: Encodable, Sendable, Equatable {
    public var appUserId: String
    public var items: [HistoryItemBody]
    public var nextCursor: String?

    enum Key: String, CodingKey { case appUserId, items, nextCursor }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(appUserId, .appUserId)
        try c.put(items, .items)
        try c.put(nextCursor, .nextCursor)
    }
}

/// The API's cursors wrap storage's own tokens in base64url, so clients treat them as opaque.
public enum HistoryCursor {
    public static func wrap(_ storageCursor: String) -> String { "h1." + Base64URL.encode(Array(storageCursor.utf8)) }

    public static func unwrap(_ cursor: String) -> String? {
        guard cursor.hasPrefix("h1."), let bytes = Base64URL.decode(cursor.dropFirst(3)) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// `GET /v1/apps/{bundleId}/products?storefront=USA`.
public struct CatalogBody: Codable, Sendable, Equatable {
    public struct ProductBody: Codable, Sendable, Equatable {
        public var productId: String
        public var type: String
        public var subscriptionGroup: String?
        public var level: Int?
        public var duration: String?
        public var entitlements: [String]
    }

    public struct GroupBody: Codable, Sendable, Equatable {
        public var id: String
        /// Sold products of the group, highest level (1) first.
        public var productIds: [String]
    }

    public var bundleId: String
    /// The storefront asked for (upper-cased), or null for every storefront.
    public var storefront: String?
    public var products: [ProductBody]
    public var groups: [GroupBody]

    /// The products of `app` sold in `storefront` (nil: all).
    public init(app: App, storefront: String?) {
        bundleId = app.bundleId
        self.storefront = storefront?.uppercased()
        let sold = app.products.filter { storefront == nil || $0.isSold(in: storefront!) }
        products = sold.map {
            ProductBody(
                productId: $0.productId, type: $0.type.rawValue, subscriptionGroup: $0.subscriptionGroup, level: $0.level,
                duration: $0.duration, entitlements: $0.entitlements)
        }
        var groups: [String: [Product]] = [:]
        for product in sold { if let group = product.subscriptionGroup { groups[group, default: []].append(product) } }
        self.groups = groups.keys.sorted().map { id in
            GroupBody(
                id: id,
                productIds: groups[id]!.sorted { ($0.level ?? Int.max, $0.productId) < ($1.level ?? Int.max, $1.productId) }
                    .map(\.productId))
        }
    }

    enum CodingKeys: String, CodingKey { case bundleId, storefront, products, groups }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: CodingKeys.self))
        try c.put(bundleId, .bundleId)
        try c.put(storefront, .storefront)
        try c.put(products, .products)
        try c.put(groups, .groups)
    }
}

/// `GET /v1/subscriptions/{originalTransactionId}` (admin).
public struct SubscriptionAdminBody: Encodable, Sendable, Equatable {
    public var originalTransactionId: String
    public var bundleId: String?
    public var environment: String
    public var customer: CustomerRecord?
    /// The subscription's state, evaluated from its own facts.
    public var grant: Grant?
    public var notifications: [HistoryItemBody]
    public var serverTime: Int64

    enum Key: String, CodingKey {
        case originalTransactionId, bundleId, environment, appUserId, appAccountToken, subscription, notifications, serverTime
    }

    public func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        try c.put(originalTransactionId, .originalTransactionId)
        try c.put(bundleId, .bundleId)
        try c.put(environment, .environment)
        try c.put(customer?.appUserId, .appUserId)
        try c.put(customer?.appAccountToken, .appAccountToken)
        try c.put(grant.map(GrantBody.init), .subscription)
        try c.put(notifications, .notifications)
        try c.date(serverTime, .serverTime)
    }
}

extension Response {
    /// The answer to Apple (and the V1 endpoint): what happened to the delivery, in the ledger's
    /// own word — `{"status":"accepted"}` or `{"status":"duplicate"}`.
    static func acknowledgment(_ status: IngestResult.Status) -> Response {
        .json(bytes: Array(#"{"status":"\#(status.rawValue)"}"#.utf8))
    }
}
