// Promotional grants: entitlements the operator gives a customer without a purchase (support,
// compensation). They are facts like Apple's, so every answer stays a function of the ledger, and
// they never change what a purchase says: an entitlement that a purchase gives access to shows
// the purchase; a grant shows only while no purchase gives that entitlement access.

/// A promotional grant (`POST /v1/customers/{appUserId}/grants`): `entitlement` from `grantedAt`
/// until `expiresDate`, unless a ``PromotionalGrantEndFact`` for the same `grantId` ends it earlier.
public struct PromotionalGrantFact: Hashable, Sendable, Codable {
    /// The grant's id (a lowercase UUID given by the server), which ends it early.
    public var grantId: String
    public var entitlement: String
    /// When it was granted (ms): it gives nothing before.
    public var grantedAt: Int64
    /// When it lapses (ms).
    public var expiresDate: Int64
    /// Why it was given (free text, at most 500 characters at the API).
    public var reason: String?
    /// The name of the API key that gave it.
    public var grantedBy: String?
    /// The customer's `appAccountToken`: what links the grant to its customer (and its aliases).
    public var appAccountToken: String

    public init(
        grantId: String, entitlement: String, grantedAt: Int64, expiresDate: Int64, reason: String? = nil,
        grantedBy: String? = nil, appAccountToken: String
    ) {
        self.grantId = grantId
        self.entitlement = entitlement
        self.grantedAt = grantedAt
        self.expiresDate = expiresDate
        self.reason = reason
        self.grantedBy = grantedBy
        self.appAccountToken = appAccountToken
    }
}

/// Ends a promotional grant early (`DELETE /v1/customers/{appUserId}/grants/{grantId}`). Several
/// ends of one grant: the earliest counts (order-free).
public struct PromotionalGrantEndFact: Hashable, Sendable, Codable {
    public var grantId: String
    /// When the grant ended (ms).
    public var endedAt: Int64
    /// The name of the API key that ended it.
    public var endedBy: String?
    /// The customer's `appAccountToken`, as on the grant.
    public var appAccountToken: String

    public init(grantId: String, endedAt: Int64, endedBy: String? = nil, appAccountToken: String) {
        self.grantId = grantId
        self.endedAt = endedAt
        self.endedBy = endedBy
        self.appAccountToken = appAccountToken
    }
}

/// Where an entitlement's access comes from: the App Store, or an operator's promotional grant.
public enum EntitlementSource: String, Hashable, Sendable, Codable, CaseIterable {
    case purchase
    case grant
}

/// One promotional grant resolved from its facts: its effective end is the earlier of its expiry
/// and its first end.
public struct PromotionalGrantState: Hashable, Sendable, Codable {
    public var grantId: String
    public var entitlement: String
    public var grantedAt: Int64
    /// The earlier of `expiresDate` and the first end.
    public var endsAt: Int64
    /// Whether a ``PromotionalGrantEndFact`` ended it before its expiry.
    public var endedEarly: Bool
    public var reason: String?

    /// Whether it gives access at `now`.
    public func isActive(at now: Int64) -> Bool { grantedAt <= now && now < endsAt }
}

extension PromotionalGrantFact {
    var orderKey: [OrderKey] {
        [
            key(grantId), key(entitlement), key(grantedAt), key(expiresDate), key(reason), key(grantedBy),
            key(appAccountToken),
        ]
    }
}

/// The promotional grants among `facts`, one per `grantId` (sorted by it). Grants count in every
/// environment: they are the operator's, not the App Store's. Every choice is a minimum or a
/// maximum, so the result does not depend on the facts' order.
public func promotionalGrants(in facts: [Fact]) -> [PromotionalGrantState] {
    var grants: [String: PromotionalGrantFact] = [:]
    var ends: [String: Int64] = [:]
    for fact in facts {
        switch fact {
        case .promotionalGrant(let g):
            if let existing = grants[g.grantId], !contentAfter(g.orderKey, existing.orderKey) { continue }
            grants[g.grantId] = g
        case .promotionalGrantEnd(let e):
            ends[e.grantId] = min(ends[e.grantId] ?? e.endedAt, e.endedAt)
        default:
            continue
        }
    }
    return grants.keys.sorted().map { id in
        let g = grants[id]!
        let end = ends[id].map { max($0, g.grantedAt) }
        let endsAt = min(g.expiresDate, end ?? g.expiresDate)
        return PromotionalGrantState(
            grantId: id, entitlement: g.entitlement, grantedAt: g.grantedAt, endsAt: endsAt,
            endedEarly: end.map { $0 < g.expiresDate } ?? false, reason: g.reason)
    }
}

extension EntitlementState {
    /// The entitlement as a promotional grant gives it: `active` until it ends, then `expired`.
    /// The grant id stands in for the transaction ids (the grant is its own transaction); there
    /// is no product.
    init(promotion: PromotionalGrantState, now: Int64, environment: Environment) {
        let grant = Grant(
            status: promotion.isActive(at: now) ? .active : .expired, productId: "", productType: .nonRenewing,
            transactionId: promotion.grantId, originalTransactionId: promotion.grantId, ownership: .purchased,
            purchaseDate: promotion.grantedAt, originalPurchaseDate: nil, expiresAt: promotion.endsAt, willRenew: false,
            environment: environment)
        self.init(id: promotion.entitlement, grant: grant)
        grantId = promotion.grantId
        store = nil
    }
}

extension Derivation {
    /// The entitlements with promotional grants applied: a purchase that gives access wins; else an
    /// active grant (the one lasting longest, then the smallest id); else the purchase as it is;
    /// else the grant that ended last. Also the instants after `now` a grant starts or ends.
    func applyingPromotions(to purchased: [EntitlementState]) -> (entitlements: [EntitlementState], boundaries: [Int64]) {
        let promotions = canon.promotions
        guard !promotions.isEmpty else { return (purchased, []) }
        var byId = Dictionary(purchased.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var boundaries: [Int64] = []
        for promotion in promotions {
            if promotion.grantedAt > now { boundaries.append(promotion.grantedAt); continue }
            if promotion.endsAt > now { boundaries.append(promotion.endsAt) }
            let candidate = EntitlementState(promotion: promotion, now: now, environment: environment)
            if let existing = byId[promotion.entitlement] {
                if existing.source == .purchase {
                    guard !existing.active, candidate.active else { continue }
                } else {
                    let better =
                        candidate.active != existing.active
                        ? candidate.active
                        : (candidate.expiresAt ?? 0) != (existing.expiresAt ?? 0)
                            ? (candidate.expiresAt ?? 0) > (existing.expiresAt ?? 0)
                            : promotion.grantId < (existing.grantId ?? "")
                    guard better else { continue }
                }
            }
            byId[promotion.entitlement] = candidate
        }
        return (byId.keys.sorted().map { byId[$0]! }, boundaries)
    }
}
