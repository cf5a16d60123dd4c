import Entitlements
import Testing

/// The rule a Google Play refund review is answered by, from the customer's facts alone.
@Suite struct RefundReviewTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_800_000_000_000

    static func subscription(order: String, observedAt: Int64, start: Int64 = t0, expiry: Int64, token: String = "sub") -> Fact {
        .playSubscription(
            PlaySubscriptionFact(
                purchaseToken: token, packageName: "com.example.app", productId: "premium", state: .active, startTime: start,
                expiryTime: expiry, latestOrderId: order, observedAt: observedAt))
    }

    static func product(consumed: Bool = false, state: Int = 0, token: String = "prod") -> Fact {
        .playProduct(
            PlayProductFact(
                purchaseToken: token, packageName: "com.example.app", productId: "coins", orderId: "GPA.9", purchaseState: state,
                purchaseTime: t0, consumed: consumed, observedAt: t0))
    }

    static func answer(_ order: String, _ token: String, _ facts: [Fact], _ preference: RefundPreference? = nil, now: Int64) -> RefundReviewAnswer {
        RefundReview.answer(orderId: order, purchaseToken: token, facts: facts, preference: preference, now: now)
    }

    @Test func oneTimeProducts() {
        let consumed = Self.answer("GPA.9", "prod", [Self.product(consumed: true)], now: Self.t0 + Self.day)
        #expect(consumed == RefundReviewAnswer(refundPreference: .decline, consumptionPercentageMilliunits: 100_000))
        let canceled = Self.answer("GPA.9", "prod", [Self.product(state: 1)], now: Self.t0 + Self.day)
        #expect(canceled == RefundReviewAnswer(refundPreference: .approve, consumptionPercentageMilliunits: 0))
        let unknownUse = Self.answer("GPA.9", "prod", [Self.product()], now: Self.t0 + Self.day)
        #expect(unknownUse == RefundReviewAnswer(refundPreference: .neutral, consumptionPercentageMilliunits: nil))
        // A refund of another order before: declined.
        let earlier = Fact.playVoided(PlayVoidedPurchaseFact(purchaseToken: "old", orderId: "GPA.1", voidedTime: Self.t0 - Self.day))
        #expect(Self.answer("GPA.9", "prod", [Self.product(), earlier], now: Self.t0).refundPreference == .decline)
        // This order refunded already: neutral.
        let this = Fact.playVoided(PlayVoidedPurchaseFact(purchaseToken: "prod", orderId: "GPA.9", voidedTime: Self.t0))
        #expect(Self.answer("GPA.9", "prod", [Self.product(), this], now: Self.t0).refundPreference == .neutral)
    }

    @Test func subscriptionOrdersAreTheShareOfTheirPeriodUsed() {
        let first = Self.subscription(order: "GPA.1", observedAt: Self.t0, expiry: Self.t0 + 30 * Self.day)
        let early = Self.answer("GPA.1", "sub", [first], now: Self.t0 + 10 * Self.day)
        #expect(early == RefundReviewAnswer(refundPreference: .neutral, consumptionPercentageMilliunits: 33_333))
        let late = Self.answer("GPA.1", "sub", [first], now: Self.t0 + 20 * Self.day)
        #expect(late == RefundReviewAnswer(refundPreference: .decline, consumptionPercentageMilliunits: 66_666))
        // A renewal order counts from when it was first seen; the first order, once renewed, is used up.
        let renewal = Self.subscription(order: "GPA.1..0", observedAt: Self.t0 + 30 * Self.day, expiry: Self.t0 + 60 * Self.day)
        #expect(Self.answer("GPA.1..0", "sub", [first, renewal], now: Self.t0 + 36 * Self.day).consumptionPercentageMilliunits == 20_000)
        #expect(Self.answer("GPA.1", "sub", [renewal, first], now: Self.t0 + 36 * Self.day).consumptionPercentageMilliunits == 100_000)
        // An order no snapshot names: unknown consumption.
        #expect(Self.answer("GPA.1..5", "sub", [first], now: Self.t0).consumptionPercentageMilliunits == nil)
        // Voided midway: consumption stops there, and the refund is Google's already.
        let voided = Fact.playVoided(PlayVoidedPurchaseFact(purchaseToken: "sub", orderId: "GPA.1", voidedTime: Self.t0 + 3 * Self.day))
        #expect(Self.answer("GPA.1", "sub", [first, voided], now: Self.t0 + 20 * Self.day)
            == RefundReviewAnswer(refundPreference: .neutral, consumptionPercentageMilliunits: 10_000))
    }

    @Test func aFixedPreferenceIsSentWithTheConsumption() {
        let first = Self.subscription(order: "GPA.1", observedAt: Self.t0, expiry: Self.t0 + 30 * Self.day)
        #expect(Self.answer("GPA.1", "sub", [first], .approve, now: Self.t0 + 20 * Self.day)
            == RefundReviewAnswer(refundPreference: .approve, consumptionPercentageMilliunits: 66_666))
    }
}
