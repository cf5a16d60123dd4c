import Entitlements
import Exports
import JSONCoding
import Storage

/// The columns of each exported table, in file order: what the files hold and what
/// docs/exports.md lists, column by column (a test compares the two).
enum ExportTables {
    static let customers: [ExportColumn<ExportedCustomer>] = [
        ExportColumn("app_user_id", "The customer's app user id (the key: a later row for the same id replaces the earlier one).") {
            .string($0.appUserId)
        },
        ExportColumn("app_account_token", "The UUID the app passes to StoreKit as `appAccountToken` for this customer.") {
            .string($0.appAccountToken)
        },
        ExportColumn("created_at", "When the server first knew the customer.") { .timestamp($0.createdAt) },
        ExportColumn("updated_at", "When the customer's answer was last computed or its attributes last changed, whichever is later: the row's change time, which places it in a run's window.") {
            .timestamp($0.updatedAt)
        },
        ExportColumn("active_entitlements", "The entitlement ids active at `updated_at` in any of the customer's environments, sorted, separated by spaces; empty when none.") {
            .string($0.activeEntitlements.joined(separator: " "))
        },
        ExportColumn("projection_failed", "`true` when the last computation failed and the stored answer is the one before it.") {
            .bool($0.projectionFailed)
        },
        ExportColumn("attributes", "The attributes the app set on the customer (`$email`, `$locale`, the app's own names; docs/offerings.md), as a JSON object text of names to values, sorted by name; `{}` when none.") {
            .string(String(decoding: (try? JSONCodec().encodeSorted(Dictionary(uniqueKeysWithValues: $0.attributes.map { ($0.name, $0.value) }))) ?? Array("{}".utf8), as: UTF8.self))
        },
    ]

    static let subscriptions: [ExportColumn<ExportedSubscription>] = [
        ExportColumn("original_transaction_id", "Apple's `originalTransactionId`: the subscription (the key).") {
            .string($0.owned.subscription.originalTransactionId)
        },
        ExportColumn("app_user_id", "The customer it belongs to.") { .string($0.owned.appUserId) },
        ExportColumn("product_id", "The product now subscribed to (after an upgrade or downgrade took effect).") {
            .string($0.owned.subscription.productId)
        },
        ExportColumn("subscription_group_id", "Apple's `subscriptionGroupIdentifier`; empty when unknown.") {
            $0.owned.subscription.group.map(ExportValue.string) ?? .null
        },
        ExportColumn("environment", "`Production`, `Sandbox` or `Xcode`.") { .string($0.owned.subscription.environment) },
        ExportColumn("status", "The subscription's status as the API answers it (`active`, `gracePeriod`, `billingRetry`, `expired`, `revoked`, `refunded`).") {
            .string($0.owned.subscription.status)
        },
        ExportColumn("expires_at", "When the current period ends; empty when unknown.") {
            $0.owned.subscription.expiresAt.map(ExportValue.timestamp) ?? .null
        },
        ExportColumn("grace_until", "When the billing grace period ends; empty outside one.") {
            $0.owned.subscription.graceUntil.map(ExportValue.timestamp) ?? .null
        },
        ExportColumn("auto_renew", "Whether it renews at `expires_at`.") { .bool($0.owned.subscription.autoRenew) },
        ExportColumn("updated_at", "When the owner's answer, which this row is part of, was last computed.") { .timestamp($0.updatedAt) },
    ]

    static let transactions: [ExportColumn<ExportedTransaction>] = [
        ExportColumn("ledger_id", "The ledger's row id: increases with every stored version; the key.") { .integer($0.id) },
        ExportColumn("transaction_id", "Apple's `transactionId`; Play: the order id (`GPA.…`, a renewal `GPA.…..N`).") { .string($0.fact.transactionId) },
        ExportColumn("original_transaction_id", "Apple's `originalTransactionId`; Play: the purchase token (of a subscription, the first token of its `linkedPurchaseToken` chain).") { .string($0.fact.originalTransactionId) },
        ExportColumn("app_user_id", "The customer the transaction's subscription (Play: purchase token) is linked to, or whose token it carries; empty when none.") {
            $0.appUserId.map(ExportValue.string) ?? .null
        },
        ExportColumn("bundle_id", "The app's bundle id; Play: its package name.") { $0.bundleId.map(ExportValue.string) ?? .null },
        ExportColumn("environment", "`Production`, `Sandbox` or `Xcode`; Play: `Sandbox` for a license tester's purchase (`testPurchase`), else `Production`.") {
            .string($0.fact.environment.rawValue)
        },
        ExportColumn("product_id", "Apple's `productId`; Play: the subscription's or one-time product's `productId`.") { .string($0.fact.productId) },
        ExportColumn("product_type", "`autoRenewable`, `nonRenewing`, `consumable` or `nonConsumable` (Apple's `type`; Play: `autoRenewable` for a subscription, else the configured product's `type`).") {
            .string($0.fact.productType.rawValue)
        },
        ExportColumn("subscription_group_id", "Apple's `subscriptionGroupIdentifier`; empty for other products and on Play.") {
            $0.fact.subscriptionGroupId.map(ExportValue.string) ?? .null
        },
        ExportColumn("purchase_date", "Apple's `purchaseDate`: when this period or purchase was charged; Play: the subscription's `startTime` for its first order, a renewal order's start as the engine dates it, a one-time product's `purchaseTimeMillis`.") { .timestamp($0.fact.purchaseDate) },
        ExportColumn("original_purchase_date", "Apple's `originalPurchaseDate`; Play: the `startTime` of the subscription's chain; empty for one-time products.") {
            $0.fact.originalPurchaseDate.map(ExportValue.timestamp) ?? .null
        },
        ExportColumn("expires_date", "Apple's `expiresDate`; Play: the order's `expiryTime` as first reported; empty for products that do not expire.") {
            $0.fact.expiresDate.map(ExportValue.timestamp) ?? .null
        },
        ExportColumn("quantity", "Apple's `quantity`; Play: a one-time purchase's `quantity`, 1 for a subscription.") { .integer(Int64($0.fact.quantity)) },
        ExportColumn("price_milli", "Apple's `price`: thousandths of a unit of `currency` (9990 is 9.99), before the store's commission; Play: what the order was charged where the stored answer says (docs/google-play.md, Prices), else empty.") {
            $0.fact.price.map(ExportValue.integer) ?? .null
        },
        ExportColumn("currency", "Apple's `currency` (ISO 4217); Play: that of the price.") { $0.fact.currency.map(ExportValue.string) ?? .null },
        ExportColumn("storefront", "Apple's `storefront`: the country (ISO 3166-1 alpha-3); Play: Google's `regionCode` as the same alpha-3 code.") {
            $0.fact.storefront.map(ExportValue.string) ?? .null
        },
        ExportColumn("storefront_id", "Apple's `storefrontId`: the storefront's numeric id; empty on Play.") {
            $0.fact.storefrontId.map(ExportValue.string) ?? .null
        },
        ExportColumn("offer_type", "Apple's `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back, 5 retention; empty without an offer. Play: 1 in a free trial or introductory `offerPhase`.") {
            $0.fact.offerType.map { .integer(Int64($0.rawValue)) } ?? .null
        },
        ExportColumn("offer_identifier", "Apple's `offerIdentifier`; Play: the line item's `offerId`.") { $0.fact.offerIdentifier.map(ExportValue.string) ?? .null },
        ExportColumn("offer_discount_type", "Apple's `offerDiscountType` (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, …); Play: `FREE_TRIAL` in a free trial, `PAY_AS_YOU_GO` in an introductory phase.") {
            $0.fact.offerDiscountType.map { .string($0.rawValue) } ?? .null
        },
        ExportColumn("transaction_reason", "Apple's `transactionReason`: `PURCHASE` or `RENEWAL`; Play: `RENEWAL` for a subscription's later orders.") {
            $0.fact.transactionReason.map { .string($0.rawValue) } ?? .null
        },
        ExportColumn("ownership", "`purchased` or `familyShared` (Apple's `inAppOwnershipType`); Play: `purchased`.") { .string($0.fact.ownership.rawValue) },
        ExportColumn("is_upgraded", "Apple's `isUpgraded`; Play: `false` (the replacing token's `linkedPurchaseToken` says it).") { .bool($0.fact.isUpgraded) },
        ExportColumn("revocation_date", "Apple's `revocationDate`: when it was refunded or revoked; empty otherwise. Play: the order's voiding (`voidedTimeMillis`), or when a one-time purchase was answered canceled or its last unit refunded.") {
            $0.fact.revocationDate.map(ExportValue.timestamp) ?? .null
        },
        ExportColumn("revocation_reason", "Apple's `revocationReason`: 0 other, 1 an issue in the app; empty on Play.") {
            $0.fact.revocationReason.map { .integer(Int64($0)) } ?? .null
        },
        ExportColumn("revocation_type", "Apple's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`); empty on Play.") {
            $0.fact.revocationType.map { .string($0.rawValue) } ?? .null
        },
        ExportColumn("app_account_token", "Apple's `appAccountToken`; Play: the newest `obfuscatedExternalAccountId` Google reported.") { $0.fact.appAccountToken.map(ExportValue.string) ?? .null },
        ExportColumn("web_order_line_item_id", "Apple's `webOrderLineItemId`; empty on Play.") { $0.fact.webOrderLineItemId.map(ExportValue.string) ?? .null },
        ExportColumn("signed_date", "Apple's `signedDate`: of two versions of one transaction, the later one is current; Play: the latest instant Google reported for the purchase token by this version (of two equal ones, the greater `ledger_id` is current).") {
            .timestamp($0.fact.signedDate)
        },
        ExportColumn("received_at", "When the server stored this version: the row's change time.") { .timestamp($0.receivedAt) },
        ExportColumn("store", "`appStore` or `playStore`: where it was bought.") { .string($0.store.rawValue) },
        ExportColumn("refunded_quantity", "Play one-time purchases: the units refunded so far (quantity-based partial refunds and full ones); empty otherwise.") {
            $0.refundedQuantity.map { .integer(Int64($0)) } ?? .null
        },
    ]

    static let events: [ExportColumn<OutboxEvent>] = [
        ExportColumn("sequence", "The event's position in the outbox (commit order); the same as the event feed's cursor.") { .integer($0.sequence) },
        ExportColumn("event_id", "The event's stable id (`evt_…`), as webhooks carry it.") { .string($0.id) },
        ExportColumn("type", "The event type (`subscription.renewed`, …; docs/events.md).") { .string($0.type) },
        ExportColumn("app_user_id", "The customer; empty for an erased one.") { $0.appUserId.map(ExportValue.string) ?? .null },
        ExportColumn("app_account_token", "The customer's token; empty for an erased one.") { $0.appAccountToken.map(ExportValue.string) ?? .null },
        ExportColumn("environment", "`Production`, `Sandbox` or `Xcode`.") { $0.environment.map(ExportValue.string) ?? .null },
        ExportColumn("bundle_id", "The app's bundle id.") { $0.bundleId.map(ExportValue.string) ?? .null },
        ExportColumn("product_id", "The product concerned.") { $0.productId.map(ExportValue.string) ?? .null },
        ExportColumn("original_transaction_id", "The subscription or purchase concerned.") { $0.originalTransactionId.map(ExportValue.string) ?? .null },
        ExportColumn("entitlements", "The entitlement ids it affects, sorted, separated by spaces.") { .string($0.entitlements.joined(separator: " ")) },
        ExportColumn("details", "The type's own fields as a JSON object text (`from`, `to`, `timing`, `kind`, `reason`).") {
            .string(String(decoding: (try? JSONCodec().encodeSorted($0.details)) ?? Array("{}".utf8), as: UTF8.self))
        },
        ExportColumn("cause", "What caused it, a JSON object text (`notificationUUID`, `notificationType`, `subtype`, `transactionIds`).") {
            .string($0.cause)
        },
        ExportColumn("occurred_at", "When it happened at the store.") { .timestamp($0.occurredAt) },
        ExportColumn("recorded_at", "When the server committed it: the row's change time.") { .timestamp($0.recordedAt) },
    ]

    /// Every table's column names and meanings (what docs/exports.md lists).
    static var documentation: [(table: ExportTable, columns: [(name: String, meaning: String)])] {
        func pairs<Row>(_ columns: [ExportColumn<Row>]) -> [(name: String, meaning: String)] { columns.map { ($0.name, $0.meaning) } }
        return [
            (.customers, pairs(customers)), (.subscriptions, pairs(subscriptions)), (.transactions, pairs(transactions)),
            (.events, pairs(events)),
        ]
    }
}
