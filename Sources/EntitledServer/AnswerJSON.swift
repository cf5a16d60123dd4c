import Entitlements
import HTTPServer
import JSONCoding
import Storage

/// The customer answer's JSON written directly, byte for byte what `JSONEncoder.entitledDefault`
/// writes for a ``CustomerBody`` (sorted keys, unescaped slashes, `null` for absent optionals).
/// The tree is written by ``JSONWriter``, whose string escaper is the one every JSON writer uses.
///
/// Every projection renders its customer's answer on the ledger's single writer thread, where
/// Foundation's encoder was the largest cost. The `Encodable` conformances stay the definition
/// (the slow path and the tests use them); a test holds this writer to the same bytes.
enum AnswerJSON {
    typealias Value = JSONWriter.Value

    static func encode(_ body: CustomerBody) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2048)
        JSONWriter.write(value(body), to: &bytes)
        return bytes
    }

    // MARK: The answer's shape (mirrors the `encode(to:)` methods in APIModels.swift)

    static func value(_ body: CustomerBody) -> Value {
        .object([
            ("appUserId", UnlinkedSubscription.isKey(body.appUserId) ? .null : .string(body.appUserId)),
            ("aliases", .array(body.aliases.map(Value.string))),
            ("appAccountToken", UnlinkedSubscription.isKey(body.appUserId) ? .null : .string(body.appAccountToken)),
            ("environment", .string(body.environment)),
            ("state", .string(body.state)),
            ("serverTime", date(body.serverTime)),
            ("entitlements", .object(body.entitlements.map { ($0.key, value($0.value.state)) })),
            ("subscriptions", .array(body.subscriptions.map { value($0.group) })),
            ("nonSubscriptions", .array(body.nonSubscriptions.map(value))),
            (
                "offers",
                .object([
                    ("introductory", .array(body.offers.introductory.map(Value.string))),
                    ("winBack", .array(body.offers.winBack.map(value))),
                    ("promotional", .array(body.offers.promotional.map(value))),
                ])
            ),
            (
                "preorder",
                .object([
                    ("isPreordered", .bool(body.preorder.isPreordered)),
                    ("preorderDate", date(body.preorder.preorderDate)),
                    ("appOriginalPurchaseDate", date(body.preorder.appOriginalPurchaseDate)),
                ])
            ),
            ("storefront", string(body.storefront)),
            ("storefrontId", string(body.storefrontId)),
            ("nextChangeAt", date(body.nextChangeAt)),
        ])
    }

    static func value(_ s: EntitlementState) -> Value {
        guard case .object(var members) = grant(s) else { return grant(s) }
        members.append(("source", .string(s.source.rawValue)))
        members.append(("grantId", string(s.grantId)))
        return .object(members)
    }

    static func value(_ offer: OfferReference) -> Value {
        .object([("productId", .string(offer.productId)), ("offerId", .string(offer.offerId))])
    }

    static func value(_ g: Grant) -> Value { grant(g) }

    static func value(_ group: SubscriptionGroupState) -> Value {
        .object([
            ("subscriptionGroup", .string(group.id)),
            ("state", .string(group.customerClass.rawValue)),
            ("current", group.current.map(value) ?? .null),
            ("pendingChange", string(group.pendingChange?.rawValue)),
            ("paidServiceDays", .int(Int64(group.paidServiceDays))),
            ("proceedsRate", .double(group.proceedsRate)),
            ("winBackOfferIds", .array(group.winBackOfferIds.map(Value.string))),
            ("environment", string(group.current?.environment.rawValue)),
        ])
    }

    static func value(_ item: NonSubscriptionBody) -> Value {
        .object([
            ("kind", .string(item.kind.rawValue)),
            ("id", .string(item.id)),
            ("active", .bool(item.active)),
            ("expiresAt", date(item.expiresAt)),
            ("balance", int(item.balance)),
            ("purchased", int(item.purchased)),
            ("refunded", int(item.refunded)),
            ("spent", int(item.spent)),
            ("transactionIds", .array(item.transactionIds.map(Value.string))),
            ("grant", item.grant.map(value) ?? .null),
        ])
    }

    /// A grant's members: `EntitlementBody` and `GrantBody` write the same ones.
    private static func grant(_ g: some GrantFields) -> Value {
        .object([
            ("active", .bool(g.active)),
            ("status", .string(g.status.rawValue)),
            ("productId", .string(g.productId)),
            ("productType", .string(g.productType.rawValue)),
            ("transactionId", .string(g.transactionId)),
            ("originalTransactionId", .string(g.originalTransactionId)),
            ("ownership", .string(g.ownership.rawValue)),
            ("purchaseDate", date(g.purchaseDate)),
            ("originalPurchaseDate", date(g.originalPurchaseDate)),
            ("expiresAt", date(g.expiresAt)),
            ("gracePeriodExpiresAt", date(g.gracePeriodExpiresAt)),
            ("willRenew", g.willRenew.map(Value.bool) ?? .null),
            ("renewsTo", string(g.renewsTo)),
            ("periodType", .string(g.periodType.rawValue)),
            ("billingIssueDetectedAt", date(g.billingIssueDetectedAt)),
            ("unsubscribeDetectedAt", date(g.unsubscribeDetectedAt)),
            ("priceIncrease", string(g.priceIncrease?.rawValue)),
            ("subscriptionGroup", string(g.subscriptionGroup)),
            ("environment", .string(g.environment.rawValue)),
            ("store", string(g.storeName)),
        ])
    }

    private static func date(_ milliseconds: Int64?) -> Value {
        milliseconds.map { .string(ISO8601.format(milliseconds: $0)) } ?? .null
    }

    private static func string(_ text: String?) -> Value { text.map(Value.string) ?? .null }

    /// A named function rather than closures in the member list: four `map { .int(…) } ?? .null`
    /// there took the type checker over a second.
    private static func int(_ number: Int?) -> Value {
        guard let number else { return .null }
        return .int(Int64(number))
    }
}

/// The members `EntitlementState` and `Grant` share (the entitlement copies its grant's).
protocol GrantFields {
    var active: Bool { get }
    var status: EntitlementStatus { get }
    var productId: String { get }
    var productType: ProductType { get }
    var transactionId: String { get }
    var originalTransactionId: String { get }
    var ownership: Ownership { get }
    var purchaseDate: Int64 { get }
    var originalPurchaseDate: Int64? { get }
    var expiresAt: Int64? { get }
    var gracePeriodExpiresAt: Int64? { get }
    var willRenew: Bool? { get }
    var renewsTo: String? { get }
    var periodType: PeriodType { get }
    var billingIssueDetectedAt: Int64? { get }
    var unsubscribeDetectedAt: Int64? { get }
    var priceIncrease: PriceIncrease? { get }
    var subscriptionGroup: String? { get }
    var environment: Entitlements.Environment { get }
    /// `store`: the purchase's store, nil for a promotional grant.
    var storeName: String? { get }
}

extension Grant: GrantFields {
    var storeName: String? { store.rawValue }
}

extension EntitlementState: GrantFields {
    var storeName: String? { store?.rawValue }
}
