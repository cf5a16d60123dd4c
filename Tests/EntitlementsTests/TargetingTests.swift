import Entitlements
import Testing

/// The offering a customer sees: ordered rules, first match wins, else the current offering; the
/// conditions one by one; the customer's states from the engine's answer; version comparison.
struct TargetingTests {
    static let rules = [
        TargetingRule(id: "beta", conditions: TargetingConditions(minAppVersion: "3.0-beta"), offeringId: "next"),
        TargetingRule(id: "lapsed-fr", conditions: TargetingConditions(storefronts: ["FRA"], states: [.inactive]), offeringId: "winback-fr"),
        TargetingRule(id: "lapsed", conditions: TargetingConditions(states: [.inactive, .billingRetry]), offeringId: "winback"),
        TargetingRule(id: "team", conditions: TargetingConditions(attributes: ["plan_hint": "team", "$locale": "de_DE"]), offeringId: "team"),
        TargetingRule(
            id: "android-en", conditions: TargetingConditions(maxAppVersion: "2.9", locales: ["en"], platforms: ["Android"]),
            offeringId: "android"),
    ]

    struct Case: CustomTestStringConvertible, Sendable {
        var label: String
        var audience: Audience
        var current: String?
        var expected: OfferingChoice?
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "no rule matches: the current offering", audience: Audience(appVersion: "2.0"), current: "default",
             expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "no rule matches and none current: nothing", audience: Audience(appVersion: "2.0"), current: nil, expected: nil),
        Case(label: "the first matching rule wins over later ones",
             audience: Audience(storefront: "fra", appVersion: "2.0", states: [.inactive]), current: "default",
             expected: OfferingChoice(offeringId: "winback-fr", ruleId: "lapsed-fr")),
        Case(label: "a storefront elsewhere falls to the next rule",
             audience: Audience(storefront: "USA", appVersion: "2.0", states: [.inactive]), current: "default",
             expected: OfferingChoice(offeringId: "winback", ruleId: "lapsed")),
        Case(label: "a list of states holds for any one of them",
             audience: Audience(appVersion: "2.0", states: [.active, .billingRetry]), current: "default",
             expected: OfferingChoice(offeringId: "winback", ruleId: "lapsed")),
        Case(label: "no storefront known: a storefront condition fails",
             audience: Audience(storefront: nil, appVersion: "2.0", states: [.inactive]), current: "default",
             expected: OfferingChoice(offeringId: "winback", ruleId: "lapsed")),
        Case(label: "a pre-release at the minimum matches",
             audience: Audience(appVersion: "3.0-beta", states: [.inactive]), current: "default",
             expected: OfferingChoice(offeringId: "next", ruleId: "beta")),
        Case(label: "the release is above its pre-release", audience: Audience(appVersion: "3"), current: "default",
             expected: OfferingChoice(offeringId: "next", ruleId: "beta")),
        Case(label: "an earlier pre-release is below the minimum", audience: Audience(appVersion: "3.0-alpha"), current: "default",
             expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "versions compare by number, not by text", audience: Audience(appVersion: "10.0"), current: "default",
             expected: OfferingChoice(offeringId: "next", ruleId: "beta")),
        Case(label: "no app version: a version condition fails", audience: Audience(), current: "default",
             expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "an app version that does not parse fails", audience: Audience(appVersion: "three"), current: "default",
             expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "every attribute given must be equal",
             audience: Audience(appVersion: "2.0", attributes: ["plan_hint": "team", "$locale": "de_DE"]), current: "default",
             expected: OfferingChoice(offeringId: "team", ruleId: "team")),
        Case(label: "one attribute different: no match",
             audience: Audience(appVersion: "2.0", attributes: ["plan_hint": "team", "$locale": "de_AT"]), current: "default",
             expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "platform any case, language locale, version at the maximum",
             audience: Audience(appVersion: "2.9.0", locale: "en-GB", platform: "android"), current: "default",
             expected: OfferingChoice(offeringId: "android", ruleId: "android-en")),
        Case(label: "above the maximum version", audience: Audience(appVersion: "2.9.1", locale: "en_GB", platform: "android"),
             current: "default", expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "another language", audience: Audience(appVersion: "2.0", locale: "fr_FR", platform: "android"),
             current: "default", expected: OfferingChoice(offeringId: "default", ruleId: nil)),
        Case(label: "another platform", audience: Audience(appVersion: "2.0", locale: "en_US", platform: "ios"),
             current: "default", expected: OfferingChoice(offeringId: "default", ruleId: nil)),
    ]

    @Test(arguments: cases)
    func chooses(_ c: Case) {
        #expect(chooseOffering(rules: Self.rules, current: c.current, audience: c.audience) == c.expected)
    }

    @Test func aRuleWithoutConditionsMatchesEveryone() {
        let rules = [TargetingRule(id: "all", conditions: TargetingConditions(), offeringId: "x")]
        #expect(chooseOffering(rules: rules, current: "default", audience: Audience()) == OfferingChoice(offeringId: "x", ruleId: "all"))
        #expect(chooseOffering(rules: [], current: "default", audience: Audience()) == OfferingChoice(offeringId: "default", ruleId: nil))
    }

    @Test(arguments: [
        ("en", "en_US", true), ("en", "EN-us", true), ("en_US", "en-US", true), ("en_US", "en", false), ("en_US", "en_GB", false),
        ("pt", "pt", true), ("pt", "ptx_BR", false), ("", "en", false),
    ])
    func localePatterns(pattern: String, locale: String, matches: Bool) {
        #expect(TargetingConditions(locales: [pattern]).matches(Audience(locale: locale)) == matches)
    }

    @Test(arguments: [
        ("1.2.3", "1.10", true), ("1.2", "1.2.0", false), ("1.2.0", "1.2", false), ("2.0-beta", "2.0", true),
        ("2.0-alpha", "2.0-beta", true), ("2.0+build.7", "2.0.1", true), ("9", "10", true),
    ])
    func versionsCompare(lower: String, higher: String, isLower: Bool) throws {
        let a = try #require(SemanticVersion(lower))
        let b = try #require(SemanticVersion(higher))
        #expect((a < b) == isLower)
    }

    @Test(arguments: ["", "1..2", "1.2.", "v1.2", "1.2-", "1.2.3.4.5.6.7", "1234567890", "-1"])
    func versionsThatDoNotParse(text: String) {
        #expect(SemanticVersion(text) == nil)
    }

    /// The states come from the engine's answer of real lifecycles.
    @Test func statesAreDerivedFromTheCustomersAnswer() {
        let e1 = months(1)
        #expect(AudienceState.of(state([], at: T0)) == [.new])
        let trial = [
            tx("t1", purchase: T0, expires: T0 + 7 * day, offer: .introductory, discount: .freeTrial, price: 0), renewal(signed: T0),
        ]
        #expect(AudienceState.of(state(trial, at: T0 + day)) == [.active, .trialUsed])
        #expect(AudienceState.of(state(trial, at: T0 + 30 * day)) == [.inactive, .trialUsed])
        let retrying = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, signed: e1), note(.didFailToRenew, at: e1, txn: "t1"),
        ]
        #expect(AudienceState.of(state(retrying, at: e1 + day)) == [.inactive, .trialUsed, .billingRetry])
        let lifetime = [tx("l1", otid: "l1", product: "lifetime", purchase: T0, type: .nonConsumable)]
        #expect(AudienceState.of(state(lifetime, at: T0 + day)) == [.active])
    }
}
