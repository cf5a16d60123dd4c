import EntitledConfig
import Entitlements
import Foundation
import Testing

/// `apps[].retention`: parsed into the engine's rules; every problem reported with its path.
@Suite struct RetentionConfigurationTests {
    static let message = "6f0e7c34-5f3a-4a59-9a53-0f6b3f1d2a10"
    static let products = #"""
        "products": [
          {"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro", "offers": {"promotional": ["half"]}},
          {"productId": "pro.yearly", "type": "autoRenewable", "subscriptionGroup": "pro"},
          {"productId": "mag.monthly", "type": "autoRenewable", "subscriptionGroup": "magazine"}
        ]
        """#
    static let signingKey =
        #""signingKey": {"keyId": "ABC123DEFG", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:IAP_KEY"}"#

    static func parse(_ retention: String, signing: Bool = true, appAppleId: Bool = true) throws -> App {
        let app = [
            #""bundleId": "com.example.app""#, appAppleId ? #""appAppleId": 1"# : #""environments": ["Sandbox"]"#, products,
            signing ? signingKey : nil, #""retention": \#(retention)"#,
        ].compactMap { $0 }.joined(separator: ", ")
        let configuration = try ConfigurationLoader(environment: ["IAP_KEY": ServerAPIConfigurationTests.pem]).parse(
            Data(#"{"apps": [{\#(app)}]}"#.utf8))
        return try #require(configuration.apps.first)
    }

    static func problems(_ retention: String, signing: Bool = true, appAppleId: Bool = true) -> [String] {
        do {
            _ = try parse(retention, signing: signing, appAppleId: appAppleId)
            return []
        } catch let error as ConfigurationError {
            return error.all.map { "\($0.path): \($0.message)" }
        } catch {
            return ["\(error)"]
        }
    }

    @Test func parsesRulesAndTheDefault() throws {
        let app = try Self.parse(
            #"""
            {"rules": [
               {"id": "offer", "when": {"productIds": ["pro.monthly"], "minPaidMonths": 6, "maxPaidMonths": 24,
                 "periodTypes": ["normal", "intro"], "offerRedeemed": false, "billingIssue": false, "refunded": false,
                 "storefronts": ["USA"], "locales": ["en-US", "de"]},
                "respond": {"promotionalOffer": {"messageIdentifier": "\#(Self.message)", "offerId": "half"}}},
               {"id": "switch", "when": {"productIds": ["pro.monthly"]},
                "respond": {"alternateProduct": {"messageIdentifier": "\#(Self.message)", "productId": "pro.yearly"}}}
             ],
             "default": {"message": {"messageIdentifier": "\#(Self.message)"}}}
            """#)
        let expected = RetentionRuleSet(
            rules: [
                RetentionRule(
                    id: "offer",
                    when: RetentionCondition(
                        productIds: ["pro.monthly"], minPaidMonths: 6, maxPaidMonths: 24, periodTypes: [.normal, .intro],
                        offerRedeemed: false, billingIssue: false, refunded: false, storefronts: ["USA"], locales: ["en-US", "de"]),
                    respond: .promotionalOffer(messageIdentifier: Self.message, offerId: "half")),
                RetentionRule(
                    id: "switch", when: RetentionCondition(productIds: ["pro.monthly"]),
                    respond: .alternateProduct(messageIdentifier: Self.message, productId: "pro.yearly")),
            ],
            defaultAnswer: .message(messageIdentifier: Self.message))
        #expect(app.retention == expected)
    }

    /// Each mistake, and the path and message it is reported with.
    @Test(arguments: [
        (
            #"{"rules": [{"id": "a", "respond": {"message": {"messageIdentifier": "not-a-uuid"}}}]}"#,
            "apps[0].retention.rules[0].respond.message.messageIdentifier: a messageIdentifier is the UUID the message was uploaded with"
        ),
        (
            #"{"rules": [{"id": "a", "respond": {"alternateProduct": {"messageIdentifier": "M", "productId": "mag.monthly"}}}]}"#,
            "apps[0].retention.rules[0].respond.alternateProduct.productId: 'pro.monthly' is not in the subscription group of 'mag.monthly': limit the rule with when.productIds"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"productIds": ["pro.yearly"]}, "respond": {"alternateProduct": {"messageIdentifier": "M", "productId": "pro.yearly"}}}]}"#,
            "apps[0].retention.rules[0].respond.alternateProduct.productId: the rule can answer for 'pro.yearly' itself: limit it with when.productIds"
        ),
        (
            #"{"default": {"promotionalOffer": {"messageIdentifier": "M", "offerId": "half"}}}"#,
            "apps[0].retention.default.promotionalOffer.offerId: 'half' is not in products[pro.yearly].offers.promotional (limit the rule with when.productIds)"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"productIds": ["pro.monthly"]}, "respond": {"promotionalOffer": {"messageIdentifier": "M", "offerId": "gone"}}}]}"#,
            "apps[0].retention.rules[0].respond.promotionalOffer.offerId: 'gone' is not in products[pro.monthly].offers.promotional (limit the rule with when.productIds)"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"productIds": ["nope"]}, "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].when.productIds[0]: 'nope' is not an auto-renewable product of this app"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"periodTypes": ["introductory"]}, "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].when.periodTypes[0]: unknown period type 'introductory' (trial, intro, promotional, offerCode, winBack, retentionOffer, normal)"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"minPaidMonths": 6, "maxPaidMonths": 2}, "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].when.maxPaidMonths: must not be less than minPaidMonths"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"storefronts": ["us"]}, "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].when.storefronts[0]: a storefront is Apple's three-letter code, e.g. USA"
        ),
        (
            #"{"rules": [{"id": "a", "respond": {"message": {"messageIdentifier": "M"}}}, {"id": "a", "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[1].id: duplicate rule id 'a'"
        ),
        (
            #"{"rules": [{"id": "default", "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].id: a rule id is 1–64 ASCII letters, digits, '.', '_' or '-', and not 'default'"
        ),
        (
            #"{"default": {"message": {"messageIdentifier": "M"}, "alternateProduct": {"messageIdentifier": "M", "productId": "pro.yearly"}}}"#,
            "apps[0].retention.default: give exactly one of message, alternateProduct, promotionalOffer"
        ),
        (
            #"{"rules": [{"id": "a", "when": {"tenure": 3}, "respond": {"message": {"messageIdentifier": "M"}}}]}"#,
            "apps[0].retention.rules[0].when.tenure: unknown key"
        ),
    ])
    func eachMistakeIsNamedByItsPath(retention: String, expected: String) {
        #expect(Self.problems(retention.replacingOccurrences(of: "\"M\"", with: "\"\(Self.message)\"")) == [expected])
    }

    @Test func anOfferNeedsTheSigningKeyAndRetentionNeedsTheAppAppleId() {
        let offer = #"{"rules": [{"id": "a", "when": {"productIds": ["pro.monthly"]}, "respond": {"promotionalOffer": {"messageIdentifier": "\#(Self.message)", "offerId": "half"}}}]}"#
        #expect(
            Self.problems(offer, signing: false) == [
                "apps[0].retention.rules[0].respond.promotionalOffer.offerId: needs the app's signingKey: the offer is signed with it"
            ])
        #expect(
            Self.problems(#"{"default": {"message": {"messageIdentifier": "\#(Self.message)"}}}"#, appAppleId: false) == [
                "apps[0].retention: needs appAppleId: requests are matched to the app by it"
            ])
    }
}
