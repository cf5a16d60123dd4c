import AppStore
import EntitledConfig
import Entitlements
import Storage

/// Why a verified payload does not map to facts: a required field is missing or unusable, or a
/// date is outside ``Fact/acceptedDates``.
public struct MappingError: Error, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Missing or unusable: the API answers `MALFORMED_PAYLOAD`.
        case missing
        /// A date outside ``Fact/acceptedDates``: the API answers `INVALID_DATE`.
        case dateOutOfRange
    }

    public var model: String
    public var field: String
    public var reason: Reason

    public init(model: String, field: String, reason: Reason = .missing) {
        self.model = model
        self.field = field
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .missing: "\(model).\(field) is missing or invalid"
        case .dateOutOfRange: "\(model).\(field) is not a date in 2000…2199"
        }
    }
}

extension Configuration {
    /// One policy over every configured app, for customer answers (customers are not per app).
    /// Catalogs merge (the first app wins a duplicate productId, Google Play apps after the App
    /// Store's); grace days and restore behaviour come from the first App Store app.
    public var policy: Policy {
        guard !apps.isEmpty || !playApps.isEmpty else { return Policy() }
        var merged = apps.first?.policy ?? Policy()
        // Google Play apps' products join after the App Store's.
        for policy in apps.dropFirst().map(\.policy) + playApps.map(\.policy) {
            for (id, product) in policy.products where merged.products[id] == nil {
                merged.products[id] = product
            }
        }
        return merged
    }
}

extension Configuration {
    /// The environments whose purchases grant access in customer answers: every app's
    /// `grantEnvironments` together (customers are not per app, so an environment grants when any
    /// app lists it), Production first (`Environment.listingOrder`).
    public var grantEnvironments: [Entitlements.Environment] {
        guard !apps.isEmpty else { return [.production, .sandbox] }
        let listed = Set(apps.flatMap(\.grantEnvironments).map(Entitlements.Environment.init(rawValue:)))
        return Entitlements.Environment.listingOrder.filter(listed.contains)
    }
}

extension Entitlements.ProductType {
    /// A configured product's kind, as the engine names it.
    init(_ kind: Product.Kind) {
        switch kind {
        case .autoRenewable: self = .autoRenewable
        case .nonConsumable: self = .nonConsumable
        case .consumable: self = .consumable
        case .nonRenewing: self = .nonRenewing
        }
    }
}

extension Entitlements.Environment {
    /// Apple's environment text → the engine's (absent means Production).
    public init(_ environment: AppStoreEnvironment?) {
        self.init(rawValue: environment?.rawValue ?? "Production")
    }
}

/// An app maps its verified App Store wire models to the engine's facts, and its configuration to
/// the engine's policy.
///
/// A copy, field for field; the only decisions are the product type (the transaction's `type`, else
/// the app's catalog, else `expiresDate` → auto-renewable, none → non-consumable) and V1's unsigned
/// dates (see ``facts(fromV1:)``).
extension App {
    // MARK: - Policy

    /// The engine's policy for this app: products → entitlements, groups, levels, durations;
    /// fallback grace days; restore behaviour.
    public var policy: Policy {
        var policies: [String: ProductPolicy] = [:]
        for product in products {
            policies[product.productId] = ProductPolicy(
                type: Entitlements.ProductType(product.type), entitlements: product.entitlements,
                subscriptionGroup: product.subscriptionGroup, level: product.level,
                duration: product.duration.flatMap { Entitlements.ISODuration(parsing: $0) },
                promotionalOffers: product.promotionalOffers, winBackOffers: product.winBackOffers)
        }
        return Policy(products: policies, fallbackGraceDays: gracePeriodDays, restoreBehavior: restoreBehavior)
    }

    // MARK: - V2

    /// A verified V2 notification → its notification fact, plus transaction, renewal-info and
    /// app-transaction facts for the nested signed data the verifier decoded.
    public func facts(from payload: ResponseBodyV2DecodedPayload) throws(MappingError) -> [Fact] {
        guard let type = payload.notificationType?.rawValue else {
            throw MappingError(model: "ResponseBodyV2DecodedPayload", field: "notificationType")
        }
        guard let uuid = payload.notificationUUID, !uuid.isEmpty else {
            throw MappingError(model: "ResponseBodyV2DecodedPayload", field: "notificationUUID")
        }
        guard let signedDate = payload.signedDate else {
            throw MappingError(model: "ResponseBodyV2DecodedPayload", field: "signedDate")
        }
        let environment = Environment(payload.verificationEnvironment)
        var facts: [Fact] = []
        var transactionFact: TransactionFact?
        if let transaction = payload.data?.transactionInfo {
            let fact = try self.transaction(transaction)
            transactionFact = fact
            facts.append(.transaction(fact))
        }
        if let renewal = payload.data?.renewalInfo {
            facts.append(.renewalInfo(try renewalInfo(renewal, fallbackProductId: transactionFact?.productId)))
        }
        if let appTransaction = payload.appData?.appTransaction {
            facts.append(.appTransaction(try self.appTransaction(appTransaction)))
        }
        let notificationFact = NotificationFact(
            type: NotificationType(rawValue: type), subtype: payload.subtype,
            notificationUUID: uuid, signedDate: signedDate, environment: environment,
            originalTransactionId: transactionFact?.originalTransactionId, transactionId: transactionFact?.transactionId,
            productId: transactionFact?.productId)
        facts.insert(.notification(try Fact.checked(notificationFact, Fact.notification)), at: 0)
        return facts
    }

    /// A signed transaction → a transaction fact.
    public func transaction(_ t: JWSTransactionDecodedPayload) throws(MappingError) -> TransactionFact {
        func need<T>(_ value: T?, _ field: String) throws(MappingError) -> T {
            guard let value else { throw MappingError(model: "JWSTransactionDecodedPayload", field: field) }
            return value
        }
        let productId = try need(t.productId, "productId")
        let expires = t.expiresDate
        let fact = TransactionFact(
            transactionId: try need(t.transactionId, "transactionId"),
            originalTransactionId: try need(t.originalTransactionId, "originalTransactionId"),
            webOrderLineItemId: t.webOrderLineItemId, productId: productId,
            subscriptionGroupId: t.subscriptionGroupIdentifier, purchaseDate: try need(t.purchaseDate, "purchaseDate"),
            originalPurchaseDate: t.originalPurchaseDate, expiresDate: expires, quantity: Int(t.quantity ?? 1),
            productType: productType(wire: t.type, productId: productId, expiresDate: expires),
            appAccountToken: t.appAccountToken.map { $0.lowercased() }, ownership: ownership(t.inAppOwnershipType),
            signedDate: try need(t.signedDate, "signedDate"), revocationDate: t.revocationDate,
            revocationReason: t.revocationReason.map { Int($0.rawValue) },
            revocationType: t.revocationType,
            isUpgraded: t.isUpgraded ?? false, offerType: t.offerType.flatMap { Entitlements.OfferType(rawValue: Int($0.rawValue)) },
            offerDiscountType: t.offerDiscountType,
            offerIdentifier: t.offerIdentifier, environment: Environment(t.environment), storefront: t.storefront,
            transactionReason: t.transactionReason,
            price: t.price, currency: t.currency, storefrontId: t.storefrontId)
        return try Fact.checked(fact, Fact.transaction)
    }

    /// Signed renewal info → a renewal-info fact. `productId` falls back to the notification's transaction.
    public func renewalInfo(_ r: JWSRenewalInfoDecodedPayload, fallbackProductId: String? = nil) throws(MappingError)
        -> RenewalInfoFact
    {
        guard let originalTransactionId = r.originalTransactionId else {
            throw MappingError(model: "JWSRenewalInfoDecodedPayload", field: "originalTransactionId")
        }
        guard let productId = r.productId ?? fallbackProductId ?? r.autoRenewProductId else {
            throw MappingError(model: "JWSRenewalInfoDecodedPayload", field: "productId")
        }
        guard let signedDate = r.signedDate else {
            throw MappingError(model: "JWSRenewalInfoDecodedPayload", field: "signedDate")
        }
        let fact = RenewalInfoFact(
            originalTransactionId: originalTransactionId, productId: productId, autoRenewProductId: r.autoRenewProductId,
            autoRenewStatus: r.autoRenewStatus == .on, expirationIntent: r.expirationIntent.map { Int($0.rawValue) },
            isInBillingRetryPeriod: r.isInBillingRetryPeriod, gracePeriodExpiresDate: r.gracePeriodExpiresDate,
            priceIncreaseStatus: r.priceIncreaseStatus.map { Int($0.rawValue) },
            offerType: r.offerType.flatMap { Entitlements.OfferType(rawValue: Int($0.rawValue)) },
            offerIdentifier: r.offerIdentifier,
            offerDiscountType: r.offerDiscountType,
            signedDate: signedDate, renewalDate: r.renewalDate, recentSubscriptionStartDate: r.recentSubscriptionStartDate,
            eligibleWinBackOfferIds: r.eligibleWinBackOfferIds ?? [], environment: Environment(r.environment))
        return try Fact.checked(fact, Fact.renewalInfo)
    }

    /// A signed app transaction → an app-transaction fact (`receiptCreationDate` plays `signedDate`).
    public func appTransaction(_ a: AppTransaction) throws(MappingError) -> AppTransactionFact {
        guard let originalPurchaseDate = a.originalPurchaseDate else {
            throw MappingError(model: "AppTransaction", field: "originalPurchaseDate")
        }
        guard let signedDate = a.receiptCreationDate else {
            throw MappingError(model: "AppTransaction", field: "receiptCreationDate")
        }
        let fact = AppTransactionFact(
            appTransactionId: a.appTransactionId, originalPurchaseDate: originalPurchaseDate, preorderDate: a.preorderDate,
            originalApplicationVersion: a.originalApplicationVersion, signedDate: signedDate,
            environment: Environment(a.receiptType))
        return try Fact.checked(fact, Fact.appTransaction)
    }

    // MARK: - V1

    /// A V1 notification → its V1 notification fact, receipt entries and pending renewals.
    ///
    /// V1 data is unsigned and undated as a whole: the receipt date (which decides between versions)
    /// is the newest date the body carries (`auto_renew_status_change_date_ms`, purchase and
    /// cancellation dates), so a repeated delivery maps to the same facts.
    ///
    /// A billing failure is the exception. It happens when the subscription's latest period ends
    /// unrenewed, later than any date the body carries, and dated at the period's purchase it would
    /// tie with that period's `DID_RENEW` success and lose. So `DID_FAIL_TO_RENEW` and pending
    /// renewal info in billing retry (or with a grace date) are dated at the latest period's
    /// `expires_date` when that is newer: still a function of the body alone.
    public func facts(fromV1 body: ResponseBodyV1) throws(MappingError) -> [Fact] {
        guard let type = body.notificationType?.rawValue else {
            throw MappingError(model: "ResponseBodyV1", field: "notification_type")
        }
        let environment = Environment(body.environment?.appStoreEnvironment ?? body.unifiedReceipt?.environment?.appStoreEnvironment)
        let entries = body.unifiedReceipt?.latestReceiptInfo ?? []
        var newest = body.autoRenewStatusChangeDate ?? Int64.min
        for entry in entries {
            for date in [entry.purchaseDate, entry.cancellationDate] { if let date { newest = max(newest, date) } }
        }
        guard newest != Int64.min else { throw MappingError(model: "ResponseBodyV1", field: "unified_receipt.latest_receipt_info") }
        var facts: [Fact] = []
        var latest: ReceiptEntryFact?
        // Per subscription, the latest period: non-upgraded first, then by purchase, then by expiry.
        var latestPeriod: [String: ReceiptEntryFact] = [:]
        for entry in entries {
            guard let fact = receiptEntry(entry, receiptDate: newest, environment: environment) else { continue }
            if latest == nil || fact.purchaseDate > latest!.purchaseDate { latest = fact }
            if let period = latestPeriod[fact.originalTransactionId] {
                let later =
                    fact.isUpgraded != period.isUpgraded
                    ? !fact.isUpgraded
                    : (fact.purchaseDate, fact.expiresDate ?? .min) > (period.purchaseDate, period.expiresDate ?? .min)
                if later { latestPeriod[fact.originalTransactionId] = fact }
            } else {
                latestPeriod[fact.originalTransactionId] = fact
            }
            facts.append(.receiptEntry(fact))
        }
        /// The date of a billing failure of subscription `otid`: the end of its latest period.
        func failureDate(_ otid: String?) -> Int64 {
            max(newest, otid.flatMap { latestPeriod[$0]?.expiresDate } ?? newest)
        }
        for renewal in body.unifiedReceipt?.pendingRenewalInfo ?? [] {
            guard let otid = renewal.originalTransactionId, let productId = renewal.productId else { continue }
            // As the engine reads it: in retry when flagged so, else when a grace date is given.
            let failing = renewal.isInBillingRetryPeriodValue ?? (renewal.gracePeriodExpiresDate != nil)
            facts.append(
                .pendingRenewal(
                    PendingRenewalFact(
                        originalTransactionId: otid, productId: productId, autoRenewProductId: renewal.autoRenewProductId,
                        autoRenewStatus: renewal.autoRenewStatusValue == .on,
                        expirationIntent: renewal.expirationIntentValue.map { Int($0.rawValue) },
                        isInBillingRetryPeriod: renewal.isInBillingRetryPeriodValue,
                        gracePeriodExpiresDate: renewal.gracePeriodExpiresDate,
                        priceConsentStatus: renewal.priceConsentStatusValue.map { Int($0.rawValue) },
                        priceIncreaseStatus: renewal.priceIncreaseStatusValue.map { Int($0.rawValue) },
                        promotionalOfferId: renewal.promotionalOfferId, offerCodeRefName: renewal.offerCodeRefName,
                        receiptDate: failing ? failureDate(otid) : newest, environment: environment)))
        }
        let notificationType = V1NotificationType(rawValue: type)
        facts.insert(
            .v1Notification(
                V1NotificationFact(
                    type: notificationType,
                    date: notificationType == .didFailToRenew ? failureDate(latest?.originalTransactionId) : newest,
                    environment: environment,
                    originalTransactionId: latest?.originalTransactionId, transactionId: latest?.transactionId,
                    productId: latest?.productId, autoRenewStatus: body.isAutoRenewEnabled)), at: 0)
        for fact in facts { try fact.checkDates() }
        return facts
    }

    /// A verifyReceipt response → receipt entries (latest and in-app), pending renewals and, when the
    /// receipt has a top level, an app-transaction fact (pre-order date, original purchase).
    public func facts(fromReceipt response: VerifyReceiptResponse) -> [Fact] {
        let environment = Environment(response.environment?.appStoreEnvironment)
        let receiptDate = response.receipt?.receiptCreationDate ?? response.receipt?.requestDate ?? 0
        var facts: [Fact] = []
        if let receipt = response.receipt, let original = receipt.originalPurchaseDate {
            facts.append(
                .appTransaction(
                    AppTransactionFact(
                        originalPurchaseDate: original, preorderDate: receipt.preorderDate,
                        originalApplicationVersion: receipt.originalApplicationVersion, signedDate: receiptDate,
                        environment: environment)))
        }
        var seen = Set<String>()
        for entry in (response.latestReceiptInfo ?? []) + (response.receipt?.inApp ?? []) {
            guard let fact = receiptEntry(entry, receiptDate: receiptDate, environment: environment),
                seen.insert(fact.transactionId).inserted
            else { continue }
            facts.append(.receiptEntry(fact))
        }
        for renewal in response.pendingRenewalInfo ?? [] {
            guard let otid = renewal.originalTransactionId, let productId = renewal.productId else { continue }
            facts.append(
                .pendingRenewal(
                    PendingRenewalFact(
                        originalTransactionId: otid, productId: productId, autoRenewProductId: renewal.autoRenewProductId,
                        autoRenewStatus: renewal.autoRenewStatusValue == .on,
                        expirationIntent: renewal.expirationIntentValue.map { Int($0.rawValue) },
                        isInBillingRetryPeriod: renewal.isInBillingRetryPeriodValue,
                        gracePeriodExpiresDate: renewal.gracePeriodExpiresDate,
                        priceConsentStatus: renewal.priceConsentStatusValue.map { Int($0.rawValue) },
                        priceIncreaseStatus: renewal.priceIncreaseStatusValue.map { Int($0.rawValue) },
                        promotionalOfferId: renewal.promotionalOfferId, offerCodeRefName: renewal.offerCodeRefName,
                        receiptDate: receiptDate, environment: environment)))
        }
        return facts
    }

    func receiptEntry(_ e: LatestReceiptInfo, receiptDate: Int64, environment: Environment) -> ReceiptEntryFact? {
        guard let tid = e.transactionId, let otid = e.originalTransactionId, let productId = e.productId,
            let purchase = e.purchaseDate
        else { return nil }
        return ReceiptEntryFact(
            transactionId: tid, originalTransactionId: otid, webOrderLineItemId: e.webOrderLineItemId, productId: productId,
            subscriptionGroupId: e.subscriptionGroupIdentifier, purchaseDate: purchase,
            originalPurchaseDate: e.originalPurchaseDate, expiresDate: e.expiresDate, cancellationDate: e.cancellationDate,
            cancellationReason: e.cancellationReasonValue.map { Int($0.rawValue) },
            isTrialPeriod: e.isTrialPeriodValue ?? false, isInIntroOfferPeriod: e.isInIntroOfferPeriodValue ?? false,
            isUpgraded: e.isUpgradedValue ?? false, ownership: ownership(e.inAppOwnershipType),
            promotionalOfferId: e.promotionalOfferId, offerCodeRefName: e.offerCodeRefName, quantity: e.quantityValue ?? 1,
            appAccountToken: e.appAccountToken.map { $0.lowercased() }, receiptDate: receiptDate, environment: environment)
    }

    // MARK: - Values

    /// `type` → product type; unknown or absent falls back to the catalog, then to `expiresDate`.
    public func productType(wire: AppStore.ProductType?, productId: String, expiresDate: Int64?)
        -> Entitlements.ProductType
    {
        switch wire {
        case .autoRenewableSubscription?: return .autoRenewable
        case .nonConsumable?: return .nonConsumable
        case .consumable?: return .consumable
        case .nonRenewingSubscription?: return .nonRenewing
        default:
            // The catalog's entry (the last one, should an id repeat).
            if let configured = products.last(where: { $0.productId == productId }) {
                return Entitlements.ProductType(configured.type)
            }
            return expiresDate == nil ? .nonConsumable : .autoRenewable
        }
    }

    func ownership(_ type: InAppOwnershipType?) -> Ownership {
        type == .familyShared ? .familyShared : .purchased
    }
}
