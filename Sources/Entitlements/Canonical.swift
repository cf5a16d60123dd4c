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
            key(transactionReason), key(price), key(currency), key(storefrontId),
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

/// Small string → dense integer ids. Customers have few subscriptions, groups and products, so a
/// linear scan of short small strings beats hashing; a dictionary takes over past 16 entries.
struct Interner {
    private(set) var values: [String] = []
    private var index: [String: Int] = [:]

    var count: Int { values.count }

    mutating func id(_ value: String) -> Int {
        if values.count <= 16 {
            for i in values.indices where values[i] == value { return i }
            values.append(value)
            if values.count > 16 {
                for i in values.indices { index[values[i]] = i }
            }
            return values.count - 1
        }
        if let id = index[value] { return id }
        values.append(value)
        index[value] = values.count - 1
        return values.count - 1
    }

    func lookup(_ value: String) -> Int? {
        if values.count <= 16 { return values.firstIndex(of: value) }
        return index[value]
    }
}

/// The facts of one environment, reduced to one version of everything.
///
/// Works on indices into the caller's array, so large fact payloads are read in place, not copied.
struct Canon {
    /// Winning transaction versions, sorted by transactionId.
    var transactions: [Txn] = []
    /// Subscriptions (originalTransactionIds) by dense id; `Txn.chain` points here.
    var chains = Interner()
    /// Newest renewal info per chain id.
    var renewals: [Renewal?] = []
    /// Evidence per chain id.
    var evidence: [Evidence] = []
    /// Group keys by dense id; `Txn.groupId` points here.
    var groups = Interner()
    var appTransaction: AppTransactionFact?
    /// Promotional grants (every environment's: they are the operator's), sorted by grantId.
    var promotions: [PromotionalGrantState] = []
    /// Consumable spends, one per idempotency key, sorted by key.
    var spends: [ConsumableSpendFact] = []
    /// Play subscription purchases, one per purchase token, sorted by token (``PlaySubscription``).
    var playSubscriptions: [PlaySubscription] = []

    /// A candidate version: the fact's index and its (signed or receipt) date.
    private struct Candidate {
        var index: Int
        var signed: Int64
        var isV1: Bool
    }

    init(facts: [Fact], policy: Policy, environment: Environment) {
        // Every transaction version as (id, candidate); sorted once, the newest of each id wins.
        var versions: [(id: String, candidate: Candidate)] = []
        versions.reserveCapacity(facts.count / 2)
        var bestRenewal: [Candidate?] = []
        var signals: [String: (date: Int64, signal: RevocationSignal)] = [:]
        var appIndex: Int?
        var hasPromotions = false
        var playSubscriptionIndices: [Int] = []
        var playVoided: [String: [PlayVoidedPurchaseFact]] = [:]
        var playProducts: [String: [PlayProductFact]] = [:]

        /// The chain id of an originalTransactionId, growing the per-chain arrays.
        func chain(_ otid: String) -> Int {
            let id = chains.id(otid)
            if id == evidence.count {
                evidence.append(Evidence())
                bestRenewal.append(nil)
            }
            return id
        }

        for i in facts.indices {
            switch facts[i] {
            case .transaction(let t):
                guard t.environment == environment else { continue }
                versions.append((t.transactionId, Candidate(index: i, signed: t.signedDate, isV1: false)))
            case .receiptEntry(let e):
                guard e.environment == environment else { continue }
                versions.append((e.transactionId, Candidate(index: i, signed: e.receiptDate, isV1: true)))
            case .renewalInfo(let r):
                guard r.environment == environment else { continue }
                let c = chain(r.originalTransactionId)
                evidence[c].note(
                    autoRenew: r.autoRenewStatus,
                    inRetry: r.isInBillingRetryPeriod ?? (r.gracePeriodExpiresDate != nil ? true : nil),
                    graceEnd: r.gracePeriodExpiresDate, at: r.signedDate)
                let candidate = Candidate(index: i, signed: r.signedDate, isV1: false)
                if let existing = bestRenewal[c], !Canon.isNewer(candidate, than: existing, in: facts) { continue }
                bestRenewal[c] = candidate
            case .pendingRenewal(let r):
                guard r.environment == environment else { continue }
                let c = chain(r.originalTransactionId)
                evidence[c].note(
                    autoRenew: r.autoRenewStatus,
                    inRetry: r.isInBillingRetryPeriod ?? (r.gracePeriodExpiresDate != nil ? true : nil),
                    graceEnd: r.gracePeriodExpiresDate, at: r.receiptDate)
                let candidate = Candidate(index: i, signed: r.receiptDate, isV1: true)
                if let existing = bestRenewal[c], !Canon.isNewer(candidate, than: existing, in: facts) { continue }
                bestRenewal[c] = candidate
            case .notification(let n):
                guard n.environment == environment else { continue }
                Canon.noteSignal(of: n, into: &signals)
                if let otid = n.originalTransactionId { evidence[chain(otid)].apply(n) }
            case .v1Notification(let n):
                guard n.environment == environment else { continue }
                if n.type == .revoke {
                    // V1 CANCEL and REFUND are also sent for upgrades; their receipt entries carry
                    // `cancellation_date` and `is_upgraded`, so only REVOKE is a signal of its own.
                    Canon.noteSignal(.revoked, transactionId: n.transactionId, at: n.date, into: &signals)
                }
                if let otid = n.originalTransactionId { evidence[chain(otid)].apply(n) }
            case .consumableSpend(let spend):
                guard spend.environment == environment else { continue }
                spends.append(spend)
            case .appTransaction(let a):
                guard a.environment == environment else { continue }
                let candidate = Candidate(index: i, signed: a.signedDate, isV1: false)
                if let existing = appIndex {
                    let current = Candidate(index: existing, signed: facts[existing].appSignedDate, isV1: false)
                    if !Canon.isNewer(candidate, than: current, in: facts) { continue }
                }
                appIndex = i
            case .promotionalGrant, .promotionalGrantEnd:
                hasPromotions = true
            case .playSubscription(let p):
                guard p.environment == environment else { continue }
                playSubscriptionIndices.append(i)
            case .playProduct(let p):
                guard p.environment == environment else { continue }
                versions.append((p.purchaseToken, Candidate(index: i, signed: p.observedAt, isV1: false)))
                playProducts[p.purchaseToken, default: []].append(p)
            case .playVoided(let v):
                guard v.environment == environment else { continue }
                playVoided[v.purchaseToken, default: []].append(v)
            case .playOrder:
                continue
            }
        }
        if hasPromotions { promotions = promotionalGrants(in: facts) }

        if let appIndex, case .appTransaction(let a) = facts[appIndex] { appTransaction = a }
        spends = Canon.onePerKey(spends)
        var products = ProductCache(policy: policy)
        // Sort the small (id, candidate) pairs, not the large transactions; newest version first per id.
        versions.sort { a, b in
            if a.id != b.id { return a.id < b.id }
            return Canon.isNewer(a.candidate, than: b.candidate, in: facts)
        }
        var result: [Txn] = []
        result.reserveCapacity(versions.count)
        var position = 0
        while position < versions.count {
            // This id's versions: the first (newest) wins; the earliest expiry is its paid period's.
            let candidate = versions[position].candidate
            var paidExpires = facts[candidate.index].expiresDate
            position += 1
            while position < versions.count && versions[position].id == versions[position - 1].id {
                if let e = facts[versions[position].candidate.index].expiresDate { paidExpires = min(paidExpires ?? e, e) }
                position += 1
            }
            var txn: Txn
            switch facts[candidate.index] {
            case .transaction(let t): txn = Txn(t, product: products.info(for: t.productId))
            case .receiptEntry(let e): txn = Txn(e, product: products.info(for: e.productId))
            case .playProduct(let p):
                // A pending purchase is not paid yet: nothing to grant or count.
                guard p.purchaseState != PlayProductFact.pending else { continue }
                let refunds = PlayProductRefunds(snapshots: playProducts[p.purchaseToken] ?? [], voids: playVoided[p.purchaseToken] ?? [])
                txn = Txn(p, product: products.info(for: p.productId), refunds: refunds)
            default: continue
            }
            txn.paidExpires = paidExpires
            if let signal = signals[txn.transactionId], signal.date > txn.signed { txn.apply(signal.signal) }
            txn.chain = chain(txn.originalTransactionId)
            if let group = txn.group { txn.groupId = groups.id(group) }
            result.append(consume txn)
        }
        transactions = result
        if !playSubscriptionIndices.isEmpty {
            playSubscriptions = Canon.playSubscriptions(
                playSubscriptionIndices, voided: playVoided, in: facts, products: &products, groups: &groups)
        }
        // After the transactions: they may have added chains.
        renewals = bestRenewal.map { candidate in
            guard let candidate else { return nil }
            switch facts[candidate.index] {
            case .renewalInfo(let r): return Renewal(r)
            case .pendingRenewal(let r): return Renewal(r)
            default: return nil
            }
        }
    }

    /// Newer date wins; on a tie a signed V2 version beats a V1 entry, then the content order decides.
    private static func isNewer(_ a: Candidate, than b: Candidate, in facts: [Fact]) -> Bool {
        if a.signed != b.signed { return a.signed > b.signed }
        if a.isV1 != b.isV1 { return !a.isV1 }
        if a.index == b.index { return false }
        return contentAfter(facts[a.index].orderKey, facts[b.index].orderKey)
    }

    private static func noteSignal(of n: NotificationFact, into signals: inout [String: (date: Int64, signal: RevocationSignal)]) {
        switch n.type {
        case .refund: noteSignal(.refunded, transactionId: n.transactionId, at: n.signedDate, into: &signals)
        case .revoke: noteSignal(.revoked, transactionId: n.transactionId, at: n.signedDate, into: &signals)
        case .refundReversed: noteSignal(.reinstated, transactionId: n.transactionId, at: n.signedDate, into: &signals)
        default: break
        }
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

extension Fact {
    /// The whole fact's content order (tie-breaks between versions of one kind).
    var orderKey: [OrderKey] {
        switch self {
        case .transaction(let f): f.orderKey
        case .receiptEntry(let f): f.orderKey
        case .renewalInfo(let f): f.orderKey
        case .pendingRenewal(let f): f.orderKey
        case .appTransaction(let f): f.orderKey
        case .promotionalGrant(let f): f.orderKey
        case .playSubscription(let f): f.orderKey
        case .playProduct(let f): f.orderKey
        case .playOrder(let f): f.orderKey
        case .notification, .v1Notification, .promotionalGrantEnd, .consumableSpend, .playVoided: []
        }
    }

    var appSignedDate: Int64 {
        if case .appTransaction(let a) = self { return a.signedDate }
        return .min
    }

    /// A transaction version's `expiresDate`.
    var expiresDate: Int64? {
        switch self {
        case .transaction(let t): t.expiresDate
        case .receiptEntry(let e): e.expiresDate
        default: nil
        }
    }
}
