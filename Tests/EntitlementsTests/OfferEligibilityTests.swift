import Entitlements
import Testing

/// Offer eligibility from the ledger: introductory (one per group, used up by any subscription),
/// promotional (existing and lapsed subscribers) and configured win-back windows.
struct OfferEligibilityTests {
    /// ``policy`` with offers on the `premium` group's monthly product.
    static let offerPolicy: Policy = {
        var p = policy
        p.products["monthly"]?.promotionalOffers = ["promo.half"]
        p.products["monthly"]?.winBackOffers = [
            WinBackOfferRule(offerId: "wb.30", minimumLapsedDays: 30),
            WinBackOfferRule(offerId: "wb.window", minimumLapsedDays: 10, maximumLapsedDays: 20),
        ]
        return p
    }()

    static func offers(_ facts: [Fact], at now: Int64) -> CustomerState {
        evaluate(facts: facts, policy: offerPolicy, now: now, environment: .production)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var label: String
        var facts: [Fact]
        var at: Int64
        var premiumIntro: Bool
        var readingIntro: Bool
        var winBack: [String]
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "never subscribed: eligible everywhere", facts: [], at: T0, premiumIntro: true, readingIntro: true, winBack: []),
        Case(
            label: "had a free trial in the group: not eligible",
            facts: [tx("t1", otid: "t1", purchase: T0, expires: T0 + 7 * day, offer: .introductory, discount: .freeTrial, price: 0)],
            at: T0 + day, premiumIntro: false, readingIntro: true, winBack: []),
        Case(
            label: "paid full price in the group: not eligible",
            facts: [tx("p1", otid: "p1", purchase: T0, expires: months(1))],
            at: T0 + day, premiumIntro: false, readingIntro: true, winBack: []),
        Case(
            label: "another group's product: still eligible in the other group",
            facts: [tx("m1", otid: "m1", product: "magazine", purchase: T0, expires: months(1))],
            at: T0 + day, premiumIntro: true, readingIntro: false, winBack: []),
        Case(
            label: "active subscriber: no win-back",
            facts: [tx("p1", otid: "p1", purchase: T0, expires: months(1))],
            at: T0 + 20 * day, premiumIntro: false, readingIntro: true, winBack: []),
        Case(
            label: "lapsed too recently: no win-back",
            facts: [tx("p1", otid: "p1", purchase: T0, expires: months(1))],
            at: months(1) + 5 * day, premiumIntro: false, readingIntro: true, winBack: []),
        Case(
            label: "lapsed 15 days: inside the 10–20 day window",
            facts: [tx("p1", otid: "p1", purchase: T0, expires: months(1))],
            at: months(1) + 15 * day, premiumIntro: false, readingIntro: true, winBack: ["wb.window"]),
        Case(
            label: "lapsed 45 days: the 30-day offer, past the window",
            facts: [tx("p1", otid: "p1", purchase: T0, expires: months(1))],
            at: months(1) + 45 * day, premiumIntro: false, readingIntro: true, winBack: ["wb.30"]),
    ]

    @Test(arguments: cases)
    func eligibilityAcrossLifecycles(_ c: Case) {
        let s = Self.offers(c.facts, at: c.at)
        #expect(s.group("premium")?.introOfferEligible == c.premiumIntro)
        #expect(s.group("reading")?.introOfferEligible == c.readingIntro)
        let premium = ["basic.monthly", "monthly", "monthly.plus", "yearly"]
        #expect(s.offers.introductory == ((c.premiumIntro ? premium : []) + (c.readingIntro ? ["magazine"] : [])).sorted())
        #expect(s.offers.winBack == c.winBack.sorted().map { OfferReference(productId: "monthly", offerId: $0) })
        // Promotional offers are for existing and lapsed subscribers of the group.
        #expect(s.offers.promotional == (c.premiumIntro ? [] : [OfferReference(productId: "monthly", offerId: "promo.half")]))
    }

    @Test func paidFullPriceUsesUpTheIntroductoryOffer() {
        // Before: only an introductory offer or trial counted, so this customer was "eligible".
        let s = state([tx("p1", otid: "p1", purchase: T0, expires: months(1))], at: T0 + day)
        #expect(s.group("premium")?.introOfferEligible == false)
    }

    @Test func winBackWindowMovesTheNextChange() {
        let facts = [tx("p1", otid: "p1", purchase: T0, expires: months(1))]
        // Expired with nothing else scheduled but the window opening at 10 days (and paid-service reset at 60).
        let lapsed = Self.offers(facts, at: months(1) + day)
        #expect(lapsed.nextStatusChangeAt == months(1) + 10 * day)
        let inside = Self.offers(facts, at: months(1) + 12 * day)
        #expect(inside.nextStatusChangeAt == months(1) + 20 * day)
    }

    @Test func billingRetryIsNoWinBack() {
        let facts = [
            tx("p1", otid: "p1", purchase: T0, expires: months(1)),
            renewal(otid: "p1", retry: true, signed: months(1)),
        ]
        let s = Self.offers(facts, at: months(1) + 35 * day)
        #expect(s.entitlement("pro")?.status == .billingRetry)
        #expect(s.offers.winBack.isEmpty)
    }
}
