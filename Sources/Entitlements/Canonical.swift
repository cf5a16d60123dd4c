// Canonicalization: turn an unordered bag of facts (with duplicates and stale versions) into one
// version per transaction and per renewal, plus order-free evidence (minima and maxima of dates).
// Every choice here is a maximum under a total order, so the result does not depend on input order.

/// A total order over field values, used only to break ties between different facts that share
/// an id and a signed date (rare: a mapper bug or a re-signed payload with equal timestamps).
enum OrderKey: Comparable {
    case absent
    case int(Int64)
    case text(String)
}

@inline(__always) func key(_ value: String?) -> OrderKey { value.map { .text($0) } ?? .absent }
@inline(__always) func key(_ value: Int64?) -> OrderKey { value.map { .int($0) } ?? .absent }
@inline(__always) func key(_ value: Int?) -> OrderKey { value.map { .int(Int64($0)) } ?? .absent }
@inline(__always) func key(_ value: Bool) -> OrderKey { .int(value ? 1 : 0) }
@inline(__always) func key<T: RawRepresentable>(_ value: T?) -> OrderKey where T.RawValue == String {
    key(value?.rawValue)
}
@inline(__always) func key(_ value: OfferType?) -> OrderKey { key(value?.rawValue) }

/// Whether `a` sorts after `b` in the content order (the "newer" one on a signedDate tie).
func contentAfter(_ a: [OrderKey], _ b: [OrderKey]) -> Bool {
    b.lexicographicallyPrecedes(a)
}

extension TransactionFact {
    var orderKey: [OrderKey] {
        [
            key(transactionId), key(originalTransactionId), key(webOrderLineItemId), key(productId),
            key(subscriptionGroupId), key(purchaseDate), key(originalPurchaseDate), key(expiresDate),
            key(quantity), key(productType), key(appAccountToken), key(ownership), key(signedDate),
            key(revocationDate), key(revocationReason), key(revocationType), key(isUpgraded), key(offerType),
            key(offerDiscountType), key(offerIdentifier), key(environment), key(storefront),
            key(transactionReason), key(price), key(currency),
        ]
    }
}

extension ReceiptEntryFact {
    var orderKey: [OrderKey] {
        [
            key(transactionId), key(originalTransactionId), key(webOrderLineItemId), key(productId),
            key(subscriptionGroupId), key(purchaseDate), key(originalPurchaseDate), key(expiresDate),
            key(cancellationDate), key(cancellationReason), key(isTrialPeriod), key(isInIntroOfferPeriod),
            key(isUpgraded), key(ownership), key(promotionalOfferId), key(offerCodeRefName), key(quantity),
            key(appAccountToken), key(receiptDate), key(environment),
        ]
    }
}

extension RenewalInfoFact {
    var orderKey: [OrderKey] {
        [
            key(originalTransactionId), key(productId), key(autoRenewProductId), key(autoRenewStatus),
            key(expirationIntent), key(isInBillingRetryPeriod.map { $0 ? 1 : 0 } as Int?),
            key(gracePeriodExpiresDate), key(priceIncreaseStatus), key(offerType), key(offerIdentifier),
            key(offerDiscountType), key(signedDate), key(renewalDate), key(recentSubscriptionStartDate),
            .int(Int64(eligibleWinBackOfferIds.count)), key(eligibleWinBackOfferIds.joined(separator: "\u{1F}")),
            key(environment),
        ]
    }
}

extension PendingRenewalFact {
    var orderKey: [OrderKey] {
        [
            key(originalTransactionId), key(productId), key(autoRenewProductId), key(autoRenewStatus),
            key(expirationIntent), key(isInBillingRetryPeriod.map { $0 ? 1 : 0 } as Int?),
            key(gracePeriodExpiresDate), key(priceConsentStatus), key(priceIncreaseStatus),
            key(promotionalOfferId), key(offerCodeRefName), key(receiptDate), key(environment),
        ]
    }
}

extension AppTransactionFact {
    var orderKey: [OrderKey] {
        [
            key(appTransactionId), key(originalPurchaseDate), key(preorderDate), key(originalApplicationVersion),
            key(signedDate), key(environment),
        ]
    }
}

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
    /// Counts against introductory-offer eligibility.
    var introLike: Bool
    var environment: Environment
    var price: Int64?
    var currency: String?
    var isV1: Bool
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

/// Dated evidence about one subscription (per `originalTransactionId`), from every renewal-info
/// version and notification. Only maxima and minima are used, so order and duplicates don't matter.
struct Evidence {
    /// Newest "auto-renew on" (renewal versions, AUTO_RENEW_ENABLED, SUBSCRIBED, …).
    var renewOn: Int64 = .min
    /// Every "auto-renew off" date.
    var renewOff: [Int64] = []
    /// Newest "billing fine" (renewal versions not in retry, DID_RENEW, DID_RECOVER, …).
    var billingOK: Int64 = .min
    /// Every "billing failed" date (renewal versions in retry, DID_FAIL_TO_RENEW).
    var billingIssue: [Int64] = []
    /// Newest EXPIRED notification.
    var expiredNotice: Int64 = .min
    /// Newest GRACE_PERIOD_EXPIRED notification.
    var graceExpiredNotice: Int64 = .min
    /// Newest PRICE_INCREASE notification (V1 PRICE_INCREASE_CONSENT counts as pending).
    var priceIncreaseDate: Int64 = .min
    var priceIncrease: PriceIncrease?

    var renewOffMax: Int64 { renewOff.max() ?? .min }

    /// Auto-renew per the newest evidence; off wins a tie. nil without evidence.
    var autoRenew: Bool? {
        let off = renewOffMax
        if off == .min && renewOn == .min { return nil }
        return renewOn > off
    }

    /// The first "off" after the last "on".
    var unsubscribedAt: Int64? {
        var first: Int64?
        for date in renewOff where date > renewOn { first = min(first ?? date, date) }
        return first
    }

    /// The first billing failure after the last success and not before `floor`.
    func issueSince(_ floor: Int64) -> Int64? {
        var first: Int64?
        for date in billingIssue where date > billingOK && date >= floor { first = min(first ?? date, date) }
        return first
    }

    var newestIssue: Int64 { billingIssue.max() ?? .min }

    mutating func notePriceIncrease(_ value: PriceIncrease, at date: Int64) {
        // Newest wins; on a tie `accepted` wins (consent is not withdrawn).
        if date > priceIncreaseDate || (date == priceIncreaseDate && value == .accepted) {
            priceIncreaseDate = date
            priceIncrease = value
        }
    }
}

/// The facts of one environment, reduced to one version of everything.
struct Canon {
    /// Winning transaction versions, sorted by transactionId.
    var transactions: [Txn] = []
    /// Newest renewal info per originalTransactionId.
    var renewals: [String: Renewal] = [:]
    var evidence: [String: Evidence] = [:]
    var appTransaction: AppTransactionFact?

    init(facts: [Fact], policy: Policy, environment: Environment) {
        var v2: [TransactionFact] = []
        var v1: [ReceiptEntryFact] = []
        var renewalV2: [RenewalInfoFact] = []
        var renewalV1: [PendingRenewalFact] = []
        var signals: [String: (date: Int64, signal: RevocationSignal)] = [:]

        for fact in facts {
            switch fact {
            case .transaction(let t):
                if t.environment == environment { v2.append(t) }
            case .receiptEntry(let e):
                if e.environment == environment { v1.append(e) }
            case .renewalInfo(let r):
                guard r.environment == environment else { continue }
                renewalV2.append(r)
                evidence[r.originalTransactionId, default: Evidence()].note(
                    autoRenew: r.autoRenewStatus, inRetry: r.isInBillingRetryPeriod, at: r.signedDate)
            case .pendingRenewal(let r):
                guard r.environment == environment else { continue }
                renewalV1.append(r)
                evidence[r.originalTransactionId, default: Evidence()].note(
                    autoRenew: r.autoRenewStatus, inRetry: r.isInBillingRetryPeriod, at: r.receiptDate)
            case .notification(let n):
                guard n.environment == environment else { continue }
                Canon.apply(n, evidence: &evidence, signals: &signals)
            case .v1Notification(let n):
                guard n.environment == environment else { continue }
                Canon.apply(n, evidence: &evidence, signals: &signals)
            case .appTransaction(let a):
                guard a.environment == environment else { continue }
                if let current = appTransaction {
                    if a.signedDate > current.signedDate
                        || (a.signedDate == current.signedDate && contentAfter(a.orderKey, current.orderKey))
                    {
                        appTransaction = a
                    }
                } else {
                    appTransaction = a
                }
            }
        }

        transactions = Canon.winningTransactions(v2: v2, v1: v1, signals: signals, policy: policy)
        renewals = Canon.winningRenewals(v2: renewalV2, v1: renewalV1)
    }

    // MARK: Transactions

    /// A reference to one transaction version: V2 (`index` into v2) or V1.
    private struct Ref {
        var isV1: Bool
        var index: Int
        var signed: Int64
    }

    private static func winningTransactions(
        v2: [TransactionFact], v1: [ReceiptEntryFact],
        signals: [String: (date: Int64, signal: RevocationSignal)], policy: Policy
    ) -> [Txn] {
        var best: [String: Ref] = [:]
        best.reserveCapacity(v2.count + v1.count)

        func isNewer(_ a: Ref, than b: Ref) -> Bool {
            if a.signed != b.signed { return a.signed > b.signed }
            // A signed V2 version beats an unsigned V1 entry of the same date.
            if a.isV1 != b.isV1 { return !a.isV1 }
            if a.isV1 { return contentAfter(v1[a.index].orderKey, v1[b.index].orderKey) }
            return contentAfter(v2[a.index].orderKey, v2[b.index].orderKey)
        }

        for (index, fact) in v2.enumerated() {
            let ref = Ref(isV1: false, index: index, signed: fact.signedDate)
            if let existing = best[fact.transactionId] {
                if isNewer(ref, than: existing) { best[fact.transactionId] = ref }
            } else {
                best[fact.transactionId] = ref
            }
        }
        for (index, entry) in v1.enumerated() {
            let ref = Ref(isV1: true, index: index, signed: entry.receiptDate)
            if let existing = best[entry.transactionId] {
                if isNewer(ref, than: existing) { best[entry.transactionId] = ref }
            } else {
                best[entry.transactionId] = ref
            }
        }

        var result: [Txn] = []
        result.reserveCapacity(best.count)
        for ref in best.values {
            var txn = ref.isV1 ? Txn(v1[ref.index], policy: policy) : Txn(v2[ref.index], policy: policy)
            if let signal = signals[txn.transactionId], signal.date > txn.signed {
                txn.apply(signal.signal)
            }
            result.append(txn)
        }
        result.sort { $0.transactionId < $1.transactionId }
        return result
    }

    private static func winningRenewals(v2: [RenewalInfoFact], v1: [PendingRenewalFact]) -> [String: Renewal] {
        var best: [String: Ref] = [:]
        func isNewer(_ a: Ref, than b: Ref) -> Bool {
            if a.signed != b.signed { return a.signed > b.signed }
            if a.isV1 != b.isV1 { return !a.isV1 }
            if a.isV1 { return contentAfter(v1[a.index].orderKey, v1[b.index].orderKey) }
            return contentAfter(v2[a.index].orderKey, v2[b.index].orderKey)
        }
        for (index, fact) in v2.enumerated() {
            let ref = Ref(isV1: false, index: index, signed: fact.signedDate)
            if let existing = best[fact.originalTransactionId], !isNewer(ref, than: existing) { continue }
            best[fact.originalTransactionId] = ref
        }
        for (index, fact) in v1.enumerated() {
            let ref = Ref(isV1: true, index: index, signed: fact.receiptDate)
            if let existing = best[fact.originalTransactionId], !isNewer(ref, than: existing) { continue }
            best[fact.originalTransactionId] = ref
        }
        var result: [String: Renewal] = [:]
        result.reserveCapacity(best.count)
        for (otid, ref) in best {
            result[otid] = ref.isV1 ? Renewal(v1[ref.index]) : Renewal(v2[ref.index])
        }
        return result
    }

    // MARK: Notifications

    private static func apply(
        _ n: NotificationFact, evidence: inout [String: Evidence],
        signals: inout [String: (date: Int64, signal: RevocationSignal)]
    ) {
        let date = n.signedDate
        switch n.type {
        case .refund: noteSignal(.refunded, transactionId: n.transactionId, at: date, into: &signals)
        case .revoke: noteSignal(.revoked, transactionId: n.transactionId, at: date, into: &signals)
        case .refundReversed: noteSignal(.reinstated, transactionId: n.transactionId, at: date, into: &signals)
        default: break
        }
        guard let otid = n.originalTransactionId else { return }
        switch n.type {
        case .didFailToRenew:
            evidence[otid, default: Evidence()].billingIssue.append(date)
        case .didRenew:
            evidence[otid, default: Evidence()].billingOK = max(evidence[otid]?.billingOK ?? .min, date)
        case .subscribed:
            var e = evidence[otid] ?? Evidence()
            e.billingOK = max(e.billingOK, date)
            e.renewOn = max(e.renewOn, date)
            evidence[otid] = e
        case .didChangeRenewalStatus:
            if n.subtype == .autoRenewEnabled {
                evidence[otid, default: Evidence()].renewOn = max(evidence[otid]?.renewOn ?? .min, date)
            } else if n.subtype == .autoRenewDisabled {
                evidence[otid, default: Evidence()].renewOff.append(date)
            }
        case .expired:
            evidence[otid, default: Evidence()].expiredNotice = max(evidence[otid]?.expiredNotice ?? .min, date)
        case .gracePeriodExpired:
            evidence[otid, default: Evidence()].graceExpiredNotice = max(
                evidence[otid]?.graceExpiredNotice ?? .min, date)
        case .priceIncrease:
            if n.subtype == .pending {
                evidence[otid, default: Evidence()].notePriceIncrease(.pending, at: date)
            } else if n.subtype == .accepted {
                evidence[otid, default: Evidence()].notePriceIncrease(.accepted, at: date)
            }
        default:
            break
        }
    }

    private static func apply(
        _ n: V1NotificationFact, evidence: inout [String: Evidence],
        signals: inout [String: (date: Int64, signal: RevocationSignal)]
    ) {
        let date = n.date
        // V1 CANCEL and REFUND are also sent for upgrades; their receipt entries carry
        // `cancellation_date` and `is_upgraded`, so only REVOKE is a signal of its own.
        if n.type == .revoke { noteSignal(.revoked, transactionId: n.transactionId, at: date, into: &signals) }
        guard let otid = n.originalTransactionId else { return }
        var e = evidence[otid] ?? Evidence()
        switch n.type {
        case .didFailToRenew:
            e.billingIssue.append(date)
        case .didRenew, .didRecover, .renewal:
            e.billingOK = max(e.billingOK, date)
        case .initialBuy, .interactiveRenewal:
            e.billingOK = max(e.billingOK, date)
            e.renewOn = max(e.renewOn, date)
        case .didChangeRenewalStatus:
            if let on = n.autoRenewStatus {
                if on { e.renewOn = max(e.renewOn, date) } else { e.renewOff.append(date) }
            }
        case .priceIncreaseConsent:
            e.notePriceIncrease(.pending, at: date)
        default:
            return
        }
        evidence[otid] = e
    }

    private static func noteSignal(
        _ signal: RevocationSignal, transactionId: String?, at date: Int64,
        into signals: inout [String: (date: Int64, signal: RevocationSignal)]
    ) {
        guard let id = transactionId else { return }
        if let existing = signals[id] {
            // Newest wins; a tie goes to the higher raw value, so the choice is order-free.
            guard date > existing.date || (date == existing.date && signal.rawValue > existing.signal.rawValue)
            else { return }
        }
        signals[id] = (date, signal)
    }
}

extension Evidence {
    mutating func note(autoRenew: Bool, inRetry: Bool?, at date: Int64) {
        if autoRenew { renewOn = max(renewOn, date) } else { renewOff.append(date) }
        switch inRetry {
        case true?: billingIssue.append(date)
        case false?: billingOK = max(billingOK, date)
        case nil: break
        }
    }
}

extension Txn {
    init(_ t: TransactionFact, policy: Policy) {
        let product = policy.products[t.productId]
        transactionId = t.transactionId
        originalTransactionId = t.originalTransactionId
        productId = t.productId
        type = t.productType
        group = Txn.groupKey(type: t.productType, product: product, appleGroup: t.subscriptionGroupId, productId: t.productId)
        purchase = t.purchaseDate
        originalPurchase = t.originalPurchaseDate
        expires = t.expiresDate
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
        introLike = t.offerType == .introductory
        switch t.offerType {
        case .introductory?: period = freeTrial ? .trial : .intro
        case .promotional?: period = .promotional
        case .offerCode?: period = .offerCode
        case .winBack?: period = .winBack
        case nil: period = .normal
        }
        environment = t.environment
        price = t.price
        currency = t.currency
        isV1 = false
    }

    init(_ e: ReceiptEntryFact, policy: Policy) {
        let product = policy.products[e.productId]
        let resolvedType = product?.type ?? (e.expiresDate != nil ? .autoRenewable : .nonConsumable)
        transactionId = e.transactionId
        originalTransactionId = e.originalTransactionId
        productId = e.productId
        type = resolvedType
        group = Txn.groupKey(type: resolvedType, product: product, appleGroup: e.subscriptionGroupId, productId: e.productId)
        purchase = e.purchaseDate
        originalPurchase = e.originalPurchaseDate
        expires = e.expiresDate
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
        introLike = e.isTrialPeriod || e.isInIntroOfferPeriod
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
        isV1 = true
    }

    static func groupKey(type: ProductType, product: ProductPolicy?, appleGroup: String?, productId: String) -> String? {
        switch type {
        case .autoRenewable: return product?.subscriptionGroup ?? appleGroup ?? productId
        case .nonRenewing: return product?.subscriptionGroup ?? productId
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
