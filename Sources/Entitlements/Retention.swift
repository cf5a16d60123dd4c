// Retention messaging: which message the App Store shows a subscriber who is about to cancel,
// chosen by the app's rules (`apps[].retention`) from what the ledger knows of the subscription,
// and what became of the subscription afterwards. Pure: no clock, no I/O.

/// What a retention answer shows: one of the three kinds of Apple's `RealtimeResponseBody`.
public enum RetentionAnswer: Hashable, Sendable {
    /// `message {messageIdentifier}`: a text message (with or without an image).
    case message(messageIdentifier: String)
    /// `alternateProduct {messageIdentifier, productId}`: a switch-plan suggestion (same subscription group).
    case alternateProduct(messageIdentifier: String, productId: String)
    /// `promotionalOffer {messageIdentifier, promotionalOfferSignatureV2}`: the server signs `offerId`
    /// for the request's product.
    case promotionalOffer(messageIdentifier: String, offerId: String)

    /// `message`, `alternateProduct` or `promotionalOffer`: the member of Apple's body it fills.
    public var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternateProduct"
        case .promotionalOffer: "promotionalOffer"
        }
    }

    /// The message Apple shows.
    public var messageIdentifier: String {
        switch self {
        case .message(let id), .alternateProduct(let id, _), .promotionalOffer(let id, _): id
        }
    }
}

/// A rule's `when`: every condition given must hold; an absent one always holds.
public struct RetentionCondition: Hashable, Sendable {
    /// The request's product is one of these.
    public var productIds: Set<String>?
    /// At least / at most this many paid months (``RetentionHistory/paidMonths``).
    public var minPaidMonths: Int?
    public var maxPaidMonths: Int?
    /// The current period's type is one of these (the answer's `periodType` values).
    public var periodTypes: Set<PeriodType>?
    /// Whether the subscription has redeemed an offer other than the introductory one.
    public var offerRedeemed: Bool?
    /// Whether the subscription is in a billing issue (grace period or billing retry).
    public var billingIssue: Bool?
    /// Whether a transaction of the subscription was refunded.
    public var refunded: Bool?
    /// The subscription's storefront (Apple's three-letter code, e.g. `USA`) is one of these.
    public var storefronts: Set<String>?
    /// The customer's locale (`userLocale`, e.g. `en-US`) is one of these; a bare language (`en`)
    /// matches each of its regions. Compared without regard to case.
    public var locales: Set<String>?

    public init(
        productIds: Set<String>? = nil, minPaidMonths: Int? = nil, maxPaidMonths: Int? = nil, periodTypes: Set<PeriodType>? = nil,
        offerRedeemed: Bool? = nil, billingIssue: Bool? = nil, refunded: Bool? = nil, storefronts: Set<String>? = nil,
        locales: Set<String>? = nil
    ) {
        self.productIds = productIds
        self.minPaidMonths = minPaidMonths
        self.maxPaidMonths = maxPaidMonths
        self.periodTypes = periodTypes
        self.offerRedeemed = offerRedeemed
        self.billingIssue = billingIssue
        self.refunded = refunded
        self.storefronts = storefronts
        self.locales = locales
    }

    /// Whether every given condition holds for `request`; a condition on the history fails for an
    /// unknown subscription (`history` nil).
    public func holds(for request: RetentionRequestFacts) -> Bool {
        if let productIds, !productIds.contains(request.productId ?? "") { return false }
        if let locales, !Self.matches(locale: request.locale, locales) { return false }
        let needsHistory =
            minPaidMonths != nil || maxPaidMonths != nil || periodTypes != nil || offerRedeemed != nil || billingIssue != nil
            || refunded != nil || storefronts != nil
        guard needsHistory else { return true }
        guard let history = request.history else { return false }
        if let minPaidMonths, history.paidMonths < minPaidMonths { return false }
        if let maxPaidMonths, history.paidMonths > maxPaidMonths { return false }
        if let periodTypes, !(history.periodType.map(periodTypes.contains) ?? false) { return false }
        if let offerRedeemed, history.offerRedeemed != offerRedeemed { return false }
        if let billingIssue, history.billingIssue != billingIssue { return false }
        if let refunded, history.refunded != refunded { return false }
        if let storefronts, !(history.storefront.map(storefronts.contains) ?? false) { return false }
        return true
    }

    private static func matches(locale: String?, _ locales: Set<String>) -> Bool {
        guard let locale = locale?.lowercased(), !locale.isEmpty else { return false }
        let language = locale.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init) ?? locale
        return locales.contains { configured in
            let configured = configured.lowercased()
            return configured == locale || configured == language
        }
    }
}

/// One rule of `apps[].retention.rules`.
public struct RetentionRule: Hashable, Sendable {
    /// Names the rule in the record and the save-rate report.
    public var id: String
    public var when: RetentionCondition
    public var respond: RetentionAnswer

    public init(id: String, when: RetentionCondition = RetentionCondition(), respond: RetentionAnswer) {
        self.id = id
        self.when = when
        self.respond = respond
    }
}

/// `apps[].retention`: the rules, in order, and the answer when none holds.
public struct RetentionRuleSet: Hashable, Sendable {
    public var rules: [RetentionRule]
    /// The answer when no rule holds, and for a subscription the ledger does not know; nil: none
    /// (Apple then shows the default message configured at Apple).
    public var defaultAnswer: RetentionAnswer?

    /// The rule id recorded when the default answered.
    public static let defaultRuleId = "default"

    public init(rules: [RetentionRule] = [], defaultAnswer: RetentionAnswer? = nil) {
        self.rules = rules
        self.defaultAnswer = defaultAnswer
    }

    /// The first rule that holds, else the default; an unknown subscription gets the default.
    /// nil when there is nothing to answer.
    public func choose(for request: RetentionRequestFacts) -> RetentionChoice? {
        if request.history != nil, let rule = rules.first(where: { $0.when.holds(for: request) }) {
            return RetentionChoice(ruleId: rule.id, answer: rule.respond)
        }
        return defaultAnswer.map { RetentionChoice(ruleId: Self.defaultRuleId, answer: $0) }
    }
}

/// The chosen answer and the rule that chose it (``RetentionRuleSet/defaultRuleId`` for the default).
public struct RetentionChoice: Hashable, Sendable {
    public var ruleId: String
    public var answer: RetentionAnswer

    public init(ruleId: String, answer: RetentionAnswer) {
        self.ruleId = ruleId
        self.answer = answer
    }
}

/// What the rules read: the request's own fields and the subscription's history.
public struct RetentionRequestFacts: Hashable, Sendable {
    /// The request's `productId`.
    public var productId: String?
    /// The request's `userLocale`.
    public var locale: String?
    /// nil: the ledger knows nothing of the subscription.
    public var history: RetentionHistory?

    public init(productId: String?, locale: String?, history: RetentionHistory?) {
        self.productId = productId
        self.locale = locale
        self.history = history
    }
}

/// A subscription's history as the rules see it.
public struct RetentionHistory: Hashable, Sendable {
    /// Paid service (the group's ``SubscriptionGroupState/paidServiceDays``) in months of 30.44
    /// days, rounded: a monthly subscriber is at 1 after their first paid month, whatever its length.
    public var paidMonths: Int
    /// The current period's type.
    public var periodType: PeriodType?
    /// An offer other than the introductory one (promotional, offer code, win-back, retention) was redeemed.
    public var offerRedeemed: Bool
    /// In a billing grace period or billing retry, or a billing issue is on record for the current period.
    public var billingIssue: Bool
    /// A transaction of the subscription was refunded or revoked.
    public var refunded: Bool
    /// The storefront of the subscription's latest transaction (else the customer's).
    public var storefront: String?

    public init(
        paidMonths: Int, periodType: PeriodType? = nil, offerRedeemed: Bool = false, billingIssue: Bool = false,
        refunded: Bool = false, storefront: String? = nil
    ) {
        self.paidMonths = paidMonths
        self.periodType = periodType
        self.offerRedeemed = offerRedeemed
        self.billingIssue = billingIssue
        self.refunded = refunded
        self.storefront = storefront
    }

    /// The history of subscription `originalTransactionId` from its customer's facts evaluated at
    /// `now`; nil when no transaction of it is among them.
    public init?(
        facts: [Fact], originalTransactionId: String, policy: Policy, now: Int64, environment: Environment
    ) {
        let transactions = Self.transactions(facts, originalTransactionId: originalTransactionId, environment: environment)
        guard let latest = transactions.max(by: { $0.purchaseDate < $1.purchaseDate }) else { return nil }
        let state = evaluate(facts: facts, policy: policy, now: now, environment: environment)
        let group = state.subscriptionGroups.first { $0.current?.originalTransactionId == originalTransactionId }
        let current = group?.current
        self.paidMonths = Int((Double(group?.paidServiceDays ?? 0) / 30.436875).rounded())
        self.periodType = current?.periodType
        self.offerRedeemed = transactions.contains { ($0.offerType ?? .introductory) != .introductory }
        self.billingIssue =
            current.map { $0.status == .gracePeriod || $0.status == .billingRetry || $0.billingIssueDetectedAt != nil } ?? false
        self.refunded = transactions.contains { $0.revocationDate != nil }
        self.storefront = latest.storefront ?? state.storefront?.storefront
    }

    /// The newest signed version of each transaction of the subscription in `environment`.
    static func transactions(_ facts: [Fact], originalTransactionId: String, environment: Environment) -> [TransactionFact] {
        var newest: [String: TransactionFact] = [:]
        for case .transaction(let fact) in facts
        where fact.originalTransactionId == originalTransactionId && fact.environment == environment {
            if let seen = newest[fact.transactionId], seen.signedDate >= fact.signedDate { continue }
            newest[fact.transactionId] = fact
        }
        return Array(newest.values)
    }
}

/// What became of a subscription after a retention answer.
public enum RetentionOutcome: String, Hashable, Sendable, Codable, CaseIterable {
    /// It renewed (or was bought again, upgraded or switched) after the request: saved.
    case renewed
    /// It ended (expired, or refunded / revoked) without renewing after the request: lost.
    case expired

    /// The outcome of subscription `originalTransactionId` for a retention request at
    /// `requestedAt`, from its customer's facts at `now`; nil while it is still undecided (active,
    /// in a grace period or billing retry, or nothing known of it).
    public static func of(
        facts: [Fact], originalTransactionId: String, requestedAt: Int64, policy: Policy, now: Int64, environment: Environment
    ) -> RetentionOutcome? {
        let transactions = RetentionHistory.transactions(facts, originalTransactionId: originalTransactionId, environment: environment)
        guard !transactions.isEmpty else { return nil }
        if transactions.contains(where: { $0.purchaseDate > requestedAt && $0.revocationDate == nil }) { return .renewed }
        let state = evaluate(facts: facts, policy: policy, now: now, environment: environment)
        if let current = state.subscriptionGroups.compactMap(\.current).first(where: { $0.originalTransactionId == originalTransactionId }) {
            switch current.status {
            case .active, .gracePeriod, .billingRetry: return nil
            case .expired, .revoked, .refunded: return .expired
            }
        }
        // Not its group's current subscription any more: ended once its last period did.
        let end = transactions.compactMap { $0.revocationDate ?? $0.expiresDate }.max()
        return end.map { $0 <= now ? .expired : nil } ?? nil
    }
}
