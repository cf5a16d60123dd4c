@testable import Entitlements
import Testing

/// One storefront vocabulary: Google's alpha-2 `regionCode` becomes Apple's alpha-3 storefront,
/// so a Play customer in `US` and an App Store customer in `USA` are one country everywhere.
@Suite struct PlayStorefrontTests {
    @Test(arguments: [("US", "USA"), ("us", "USA"), ("DE", "DEU"), ("GB", "GBR"), ("XK", "XKS"), ("ZW", "ZWE")])
    func alpha2BecomesAlpha3(_ code: String, _ expected: String) {
        #expect(CountryCode.alpha3(code) == expected)
    }

    /// Alpha-3 codes, unassigned codes and junk are kept as given, never a crash.
    @Test(arguments: ["USA", "ZZ", "", "U", "1A", "ÜS", "United States"])
    func unknownCodesAreKept(_ code: String) {
        #expect(CountryCode.alpha3(code) == code)
    }

    /// The table is ISO 3166-1 (249 countries, plus Kosovo): distinct alpha-3 codes of capitals.
    @Test func tableIsComplete() {
        let table = CountryCode.alpha3ByAlpha2
        #expect(table.count == 250)
        #expect(Set(table.values).count == table.count)
        func capitals(_ s: String, _ n: Int) -> Bool { s.utf8.count == n && s.utf8.allSatisfy { (65...90).contains($0) } }
        #expect(table.allSatisfy { capitals($0.key, 2) && capitals($0.value, 3) })
    }

    static func playFacts(region: String?) -> [Fact] {
        guard case .playSubscription(var f) = play("p", .active, observed: T0, price: 9_990, periodType: .normal) else { return [] }
        f.regionCode = region
        var product = PlayProductFact(
            purchaseToken: "c", packageName: "com.example.app", productId: "play.lifetime", orderId: "GPA.c", purchaseState: 0,
            purchaseTime: T0 + day, observedAt: T0 + day)
        product.regionCode = region
        return [.playSubscription(f), .playProduct(product)]
    }

    /// The answer's storefront, the events' and the charts' storefront segment are Apple's code.
    @Test func playCustomerHasAlpha3Storefront() {
        let facts = Self.playFacts(region: "US")
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + 2 * day)
        #expect(state.storefront?.storefront == "USA")
        let events = eventTimeline(facts: facts, policy: playPolicy, now: T0 + 2 * day, environment: .production)
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.details["storefront"] == "USA" }, "\(events)")
        let charts = metricContribution(facts: facts, policy: playPolicy).charts
        #expect(!charts.isEmpty)
        #expect(Set(charts.map(\.segment.storefront)) == ["USA"])
        let audience = Audience(storefront: state.storefront?.storefront)
        #expect(TargetingConditions(storefronts: ["USA"]).matches(audience))
    }

    /// A Play and an App Store customer of one country share one storefront segment.
    @Test func playAndAppleShareOneSegment() {
        var apple = tx("a0", otid: "a", purchase: T0, expires: months(1))
        if case .transaction(var t) = apple {
            t.storefront = "USA"
            apple = .transaction(t)
        }
        let play = metricContribution(facts: Self.playFacts(region: "US"), policy: playPolicy).charts
        let app = metricContribution(facts: [apple], policy: playPolicy).charts
        let segments = Set((play + app).filter { $0.kind == .actives }.map(\.segment.storefront))
        #expect(segments == ["USA"])
    }

    /// A code the table does not know reaches every consumer as Google sent it; none is no storefront.
    @Test func unknownOrMissingRegion() {
        let unknown = evaluate(facts: Self.playFacts(region: "ZZ"), policy: playPolicy, now: T0 + 2 * day)
        #expect(unknown.storefront?.storefront == "ZZ")
        let none = evaluate(facts: Self.playFacts(region: nil), policy: playPolicy, now: T0 + 2 * day)
        #expect(none.storefront == nil)
    }
}
