import Entitlements
import Testing

/// The retention rules (`apps[].retention`): every condition optional, all given must hold, the
/// first rule that holds wins, the default otherwise and for an unknown subscription; the history
/// the rules read, and the outcome attributed to an answer.
@Suite struct RetentionRuleTests {
    static let stay = RetentionAnswer.message(messageIdentifier: "m-stay")
    static let offer = RetentionAnswer.promotionalOffer(messageIdentifier: "m-offer", offerId: "half")
    static let switchPlan = RetentionAnswer.alternateProduct(messageIdentifier: "m-switch", productId: "yearly")
    static let fallback = RetentionAnswer.message(messageIdentifier: "m-default")

    static let rules = RetentionRuleSet(
        rules: [
            RetentionRule(id: "billing", when: RetentionCondition(billingIssue: true), respond: stay),
            RetentionRule(id: "refunded", when: RetentionCondition(refunded: true), respond: stay),
            RetentionRule(
                id: "loyal-offer", when: RetentionCondition(minPaidMonths: 6, offerRedeemed: false, storefronts: ["USA", "CAN"]),
                respond: offer),
            RetentionRule(
                id: "new-monthly", when: RetentionCondition(productIds: ["monthly"], maxPaidMonths: 2, periodTypes: [.normal, .intro]),
                respond: switchPlan),
            RetentionRule(id: "german", when: RetentionCondition(locales: ["de"]), respond: stay),
        ],
        defaultAnswer: fallback)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var productId: String? = "monthly"
        var locale: String? = "en-US"
        var history: RetentionHistory?
        var expected: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "unknown subscription: the default", history: nil, expected: "default"),
        Case(name: "unknown subscription in German: still the default", locale: "de-DE", history: nil, expected: "default"),
        Case(name: "billing issue first", history: RetentionHistory(paidMonths: 12, billingIssue: true, refunded: true), expected: "billing"),
        Case(name: "refunded", history: RetentionHistory(paidMonths: 12, refunded: true, storefront: "USA"), expected: "refunded"),
        Case(name: "loyal US subscriber, no offer yet", history: RetentionHistory(paidMonths: 6, storefront: "USA"), expected: "loyal-offer"),
        Case(
            name: "loyal but already had an offer", history: RetentionHistory(paidMonths: 9, offerRedeemed: true, storefront: "USA"),
            expected: "default"),
        Case(name: "loyal in another storefront", history: RetentionHistory(paidMonths: 9, storefront: "FRA"), expected: "default"),
        Case(name: "loyal without a storefront", history: RetentionHistory(paidMonths: 9), expected: "default"),
        Case(name: "five months is not six", history: RetentionHistory(paidMonths: 5, storefront: "USA"), expected: "default"),
        Case(
            name: "new monthly subscriber at full price", history: RetentionHistory(paidMonths: 1, periodType: .normal),
            expected: "new-monthly"),
        Case(
            name: "new subscriber of another product", productId: "monthly.plus",
            history: RetentionHistory(paidMonths: 1, periodType: .normal), expected: "default"),
        Case(name: "in a free trial", history: RetentionHistory(paidMonths: 0, periodType: .trial), expected: "default"),
        Case(
            name: "three months is past maxPaidMonths", history: RetentionHistory(paidMonths: 3, periodType: .normal),
            expected: "default"),
        Case(name: "German by language", locale: "de-AT", history: RetentionHistory(paidMonths: 3), expected: "german"),
        Case(name: "German, case aside", locale: "DE_de", history: RetentionHistory(paidMonths: 3), expected: "german"),
        Case(name: "no locale", locale: nil, history: RetentionHistory(paidMonths: 3), expected: "default"),
    ]

    @Test(arguments: cases) func theFirstRuleThatHoldsAnswers(_ example: Case) {
        let choice = Self.rules.choose(
            for: RetentionRequestFacts(productId: example.productId, locale: example.locale, history: example.history))
        #expect(choice?.ruleId == example.expected)
        let expectedAnswer = Self.rules.rules.first { $0.id == example.expected }?.respond ?? Self.fallback
        #expect(choice?.answer == expectedAnswer)
    }

    @Test func withoutADefaultNothingIsChosen() {
        let rules = RetentionRuleSet(rules: Self.rules.rules)
        #expect(rules.choose(for: RetentionRequestFacts(productId: "monthly", locale: "en-US", history: nil)) == nil)
        #expect(rules.choose(for: RetentionRequestFacts(productId: "monthly", locale: "fr", history: RetentionHistory(paidMonths: 40))) == nil)
    }

    @Test func aRuleWithoutConditionsAlwaysHoldsForAKnownSubscription() {
        let rules = RetentionRuleSet(rules: [RetentionRule(id: "all", respond: Self.stay)], defaultAnswer: Self.fallback)
        #expect(rules.choose(for: RetentionRequestFacts(productId: nil, locale: nil, history: RetentionHistory(paidMonths: 0)))?.ruleId == "all")
        #expect(rules.choose(for: RetentionRequestFacts(productId: nil, locale: nil, history: nil))?.ruleId == "default")
    }

    // MARK: - The history the rules read

    @Test func historyOfASubscriptionFromItsFacts() throws {
        let facts = [
            tx("t1", purchase: T0, expires: months(1), offer: .introductory),
            tx("t2", purchase: months(1), expires: months(2)),
            tx("t3", purchase: months(2), expires: months(3), offer: .promotional),
            tx("other", otid: "o2", product: "magazine", purchase: T0, expires: months(1), revoked: T0 + day),
            renewal(signed: months(2)),
        ]
        let history = try #require(
            RetentionHistory(facts: facts, originalTransactionId: "o1", policy: policy, now: months(2) + day, environment: .production))
        #expect(history.paidMonths == 3)
        #expect(history.periodType == .promotional)
        #expect(history.offerRedeemed)
        #expect(!history.billingIssue)
        // Another subscription's refund is not this one's.
        #expect(!history.refunded)
        #expect(RetentionHistory(facts: facts, originalTransactionId: "o9", policy: policy, now: months(2), environment: .production) == nil)
        // Only the request's environment counts.
        #expect(RetentionHistory(facts: facts, originalTransactionId: "o1", policy: policy, now: months(2), environment: .sandbox) == nil)
    }

    @Test func anIntroductoryOfferIsNoRedeemedOfferAndABillingRetryIsABillingIssue() throws {
        let facts = [
            tx("t1", purchase: T0, expires: months(1), offer: .introductory),
            renewal(retry: true, signed: months(1) + hour),
        ]
        let history = try #require(
            RetentionHistory(facts: facts, originalTransactionId: "o1", policy: policy, now: months(1) + day, environment: .production))
        #expect(!history.offerRedeemed)
        #expect(history.billingIssue)
    }

    // MARK: - Outcomes

    @Test func aRenewalAfterTheRequestIsASave() {
        let requestedAt = T0 + 20 * day
        var facts = [tx("t1", purchase: T0, expires: months(1)), renewal(signed: T0)]
        // Before the period ends: undecided.
        #expect(RetentionOutcome.of(facts: facts, originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: T0 + 25 * day, environment: .production) == nil)
        facts.append(tx("t2", purchase: months(1), expires: months(2)))
        #expect(RetentionOutcome.of(facts: facts, originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: months(1) + hour, environment: .production) == .renewed)
    }

    @Test func anExpiryWithoutRenewalIsALoss() {
        let requestedAt = T0 + 20 * day
        let facts = [tx("t1", purchase: T0, expires: months(1)), renewal(autoRenew: false, signed: requestedAt + hour)]
        #expect(RetentionOutcome.of(facts: facts, originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: months(1) - hour, environment: .production) == nil)
        #expect(RetentionOutcome.of(facts: facts, originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: months(1) + hour, environment: .production) == .expired)
        // Nothing known: undecided for ever.
        #expect(RetentionOutcome.of(facts: [], originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: months(3), environment: .production) == nil)
    }

    @Test func aBillingRetryIsUndecidedUntilItEnds() {
        let requestedAt = T0 + 20 * day
        let facts = [tx("t1", purchase: T0, expires: months(1)), renewal(retry: true, signed: months(1) + hour)]
        #expect(RetentionOutcome.of(facts: facts, originalTransactionId: "o1", requestedAt: requestedAt, policy: policy, now: months(1) + day, environment: .production) == nil)
    }
}
