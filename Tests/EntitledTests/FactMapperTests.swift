import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import JSONCoding
import Testing

@Suite struct FactMapperTests {
    let app = App(
        bundleId: "com.example", appAppleId: 41234, environments: ["Production", "Sandbox", "LocalTesting"],
        sharedSecret: "shared", gracePeriodDays: 6, restoreBehavior: .keep,
        products: [
            Product(productId: "com.example.product", type: .autoRenewable, subscriptionGroup: "pro", level: 1,
                    entitlements: ["pro"]),
            Product(productId: "pass", type: .nonRenewing, subscriptionGroup: "passes", duration: "P1M", entitlements: ["pro"]),
            Product(productId: "coins", type: .consumable),
            Product(productId: "lifetime", type: .nonConsumable, entitlements: ["pro", "extras"]),
        ])

    @Test(.enabled(if: AppleTestData.suitesRun)) func appleTransactionFixtureMapsFieldForField() throws {
        let transaction = try AppleFixtures.load(JWSTransactionDecodedPayload.self, "signedTransaction.json")
        let fact = try app.transaction(transaction)
        #expect(
            fact
                == TransactionFact(
                    transactionId: "23456", originalTransactionId: "12345", webOrderLineItemId: "34343",
                    productId: "com.example.product", subscriptionGroupId: "55555", purchaseDate: 1_698_148_900_000,
                    originalPurchaseDate: 1_698_148_800_000, expiresDate: 1_698_149_000_000, quantity: 1,
                    productType: .autoRenewable, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                    ownership: .purchased, signedDate: 1_698_148_900_000, revocationDate: 1_698_148_950_000,
                    revocationReason: 1, isUpgraded: true, offerType: .introductory, offerDiscountType: .payAsYouGo,
                    offerIdentifier: "abc.123", environment: .localTesting, storefront: "USA",
                    transactionReason: .purchase, price: 10990, currency: "USD", storefrontId: "143441"))
        let revoked = try app.transaction(
            AppleFixtures.load(JWSTransactionDecodedPayload.self, "signedTransactionWithRevocation.json"))
        #expect(revoked.revocationType == .refundProrated)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func appleRenewalInfoFixture() throws {
        let renewal = try AppleFixtures.load(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo.json")
        let fact = try app.renewalInfo(renewal)
        #expect(
            fact
                == RenewalInfoFact(
                    originalTransactionId: "12345", productId: "com.example.product",
                    autoRenewProductId: "com.example.product.2", autoRenewStatus: true, expirationIntent: 1,
                    isInBillingRetryPeriod: true, gracePeriodExpiresDate: 1_698_148_900_000, priceIncreaseStatus: 0,
                    offerType: .promotional, offerIdentifier: "abc.123", offerDiscountType: .payAsYouGo,
                    signedDate: 1_698_148_800_000, renewalDate: 1_698_148_850_000,
                    recentSubscriptionStartDate: 1_698_148_800_000, eligibleWinBackOfferIds: ["eligible1", "eligible2"],
                    environment: .localTesting))
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func appleNotificationFixtureGivesNotificationTransactionAndRenewalFacts() throws {
        var payload = try AppleFixtures.load(ResponseBodyV2DecodedPayload.self, "signedNotification.json")
        payload.data?.transactionInfo = try AppleFixtures.load(JWSTransactionDecodedPayload.self, "signedTransaction.json")
        payload.data?.renewalInfo = try AppleFixtures.load(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo.json")
        let facts = try app.facts(from: payload)
        #expect(facts.count == 3)
        guard case .notification(let notification) = facts[0] else {
            Issue.record("first fact is not the notification")
            return
        }
        #expect(
            notification
                == NotificationFact(
                    type: .subscribed, subtype: .initialBuy, notificationUUID: "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
                    signedDate: 1_698_148_900_000, environment: .localTesting, originalTransactionId: "12345",
                    transactionId: "23456", productId: "com.example.product"))
        #expect(facts.contains { if case .transaction = $0 { true } else { false } })
        #expect(facts.contains { if case .renewalInfo = $0 { true } else { false } })
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func summaryAndRescindConsentNotifications() throws {
        let summary = try AppleFixtures.load(ResponseBodyV2DecodedPayload.self, "signedSummaryNotification.json")
        let facts = try app.facts(from: summary)
        #expect(facts.count == 1)
        #expect(facts[0].environment == .localTesting)
        var rescind = try AppleFixtures.load(ResponseBodyV2DecodedPayload.self, "signedRescindConsentNotification.json")
        rescind.appData?.appTransaction = try AppleFixtures.load(AppTransaction.self, "appTransaction.json")
        let rescindFacts = try app.facts(from: rescind)
        #expect(
            rescindFacts.last
                == .appTransaction(
                    AppTransactionFact(
                        appTransactionId: "71134", originalPurchaseDate: 1_698_148_800_000, preorderDate: 1_698_148_700_000,
                        originalApplicationVersion: "1.1.2", signedDate: 1_698_148_900_000, environment: .localTesting)))
    }

    /// Every V2 notification fixture of Apple's library: the notification fact's type, subtype and
    /// environment, and how many facts it yields with the fixture transaction and renewal info attached
    /// where the payload carries `data`.
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("signedNotification.json", "SUBSCRIBED", "INITIAL_BUY", "LocalTesting", 3),
        ("signedConsumptionRequestNotification.json", "CONSUMPTION_REQUEST", nil, "LocalTesting", 3),
        ("signedSummaryNotification.json", "RENEWAL_EXTENSION", "SUMMARY", "LocalTesting", 1),
        ("signedExternalPurchaseTokenNotification.json", "EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", "Production", 1),
        ("signedExternalPurchaseTokenSandboxNotification.json", "EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", "Sandbox", 1),
        ("signedRescindConsentNotification.json", "RESCIND_CONSENT", nil, "LocalTesting", 2),
    ] as [(String, String, String?, String, Int)])
    func everyNotificationFixture(file: String, type: String, subtype: String?, environment: String, count: Int) throws {
        var payload = try AppleFixtures.load(ResponseBodyV2DecodedPayload.self, file)
        if payload.data != nil {
            payload.data?.transactionInfo = try AppleFixtures.load(JWSTransactionDecodedPayload.self, "signedTransaction.json")
            payload.data?.renewalInfo = try AppleFixtures.load(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo.json")
        }
        if payload.appData != nil {
            payload.appData?.appTransaction = try AppleFixtures.load(AppTransaction.self, "appTransaction.json")
        }
        let facts = try app.facts(from: payload)
        #expect(facts.count == count)
        guard case .notification(let notification) = facts.first else {
            Issue.record("no notification fact")
            return
        }
        #expect(notification.type.rawValue == type)
        #expect(notification.subtype?.rawValue == subtype)
        #expect(notification.environment.rawValue == environment)
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.signedDate == 1_698_148_900_000)
        #expect(facts.allSatisfy { $0.environment.rawValue == environment || payload.data != nil })
    }

    @Test(arguments: [
        (AppStore.ProductType.autoRenewableSubscription, "x", Int64?.none, Entitlements.ProductType.autoRenewable),
        (.nonConsumable, "x", nil, .nonConsumable),
        (.consumable, "x", nil, .consumable),
        (.nonRenewingSubscription, "x", nil, .nonRenewing),
        (AppStore.ProductType(rawValue: "Something New"), "pass", nil, .nonRenewing),
        (AppStore.ProductType(rawValue: "Something New"), "coins", 5, .consumable),
        (AppStore.ProductType(rawValue: "Something New"), "unknown", 5, .autoRenewable),
        (AppStore.ProductType(rawValue: "Something New"), "unknown", nil, .nonConsumable),
    ])
    func productTypeFromWireThenCatalog(
        wire: AppStore.ProductType, productId: String, expires: Int64?, expected: Entitlements.ProductType
    ) {
        #expect(app.productType(wire: wire, productId: productId, expiresDate: expires) == expected)
    }

    /// The nested payloads' decodings are the verifier's alone: no JSON (signed or not) can
    /// supply them, and encoding never writes them, with either codec.
    @Test func decodedNestedPayloadsAreNeverReadFromJSON() throws {
        let json = #"""
            {"notificationType":"SUBSCRIBED","notificationUUID":"u1","signedDate":1700000000000,
             "data":{"bundleId":"com.example","transactionInfo":{"transactionId":"1","originalTransactionId":"1",
             "productId":"lifetime","purchaseDate":1700000000000,"signedDate":1700000000000},
             "renewalInfo":{"originalTransactionId":"1","productId":"lifetime","signedDate":1700000000000}},
             "appData":{"appTransaction":{"originalPurchaseDate":1700000000000,"receiptCreationDate":1700000000000}}}
            """#
        for payload in [
            try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json.utf8)),
            try JSONCodec().decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8)),
        ] {
            #expect(payload.data?.bundleId == "com.example")
            #expect(payload.data?.transactionInfo == nil && payload.data?.renewalInfo == nil)
            #expect(payload.appData?.appTransaction == nil)
            #expect(try app.facts(from: payload).count == 1)
        }
        var verified = try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json.utf8))
        verified.data?.transactionInfo = JWSTransactionDecodedPayload(transactionId: "1")
        let encoded = String(decoding: try JSONEncoder().encode(verified), as: UTF8.self)
        #expect(!encoded.contains("transactionInfo\""))
    }

    @Test func aRetentionOfferMapsToItsOfferType() throws {
        var transaction = JWSTransactionDecodedPayload(
            originalTransactionId: "1", transactionId: "2", productId: "com.example.product", purchaseDate: 1_700_000_000_000,
            signedDate: 1_700_000_000_000)
        transaction.offerType = .retentionOffer
        transaction.offerIdentifier = "stay50"
        #expect(try app.transaction(transaction).offerType == .retentionOffer)
        var renewal = JWSRenewalInfoDecodedPayload(originalTransactionId: "1", productId: "com.example.product", signedDate: 1_700_000_000_000)
        renewal.offerType = .retentionOffer
        #expect(try app.renewalInfo(renewal).offerType == .retentionOffer)
    }

    @Test func missingRequiredFieldsAreMappingErrors() {
        var transaction = JWSTransactionDecodedPayload(
            originalTransactionId: "1", transactionId: "1", productId: "p", purchaseDate: 1_700_000_000_000,
            signedDate: 1_700_000_000_000)
        #expect(throws: Never.self) { try App(bundleId: "com.example.unconfigured").transaction(transaction) }
        transaction.signedDate = nil
        #expect(throws: MappingError.self) { try App(bundleId: "com.example.unconfigured").transaction(transaction) }
        #expect(throws: MappingError.self) {
            try App(bundleId: "com.example.unconfigured").facts(from: ResponseBodyV2DecodedPayload(notificationType: .test))
        }
    }

    @Test func policyFromConfiguration() {
        let policy = app.policy
        #expect(policy.fallbackGraceDays == 6)
        #expect(policy.restoreBehavior == .keep)
        #expect(
            policy.products["com.example.product"]
                == ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "pro", level: 1))
        #expect(policy.products["pass"]?.duration == Entitlements.ISODuration(months: 1))
        #expect(policy.products["lifetime"]?.entitlements == ["pro", "extras"])
        var configuration = Configuration()
        var second = App(bundleId: "com.other", products: [Product(productId: "other", type: .consumable)])
        second.gracePeriodDays = 1
        configuration.apps = [app, second]
        let merged = configuration.policy
        #expect(merged.products.count == 5)
        #expect(merged.fallbackGraceDays == 6)
    }

    static let v1Body = ResponseBodyV1(
        notificationType: .didRenew, password: "shared", environment: .prod, bid: "com.example",
        autoRenewStatus: "true", autoRenewStatusChangeDateMs: "1700000000000",
        unifiedReceipt: UnifiedReceipt(
            environment: .production, status: 0,
            latestReceiptInfo: [
                LatestReceiptInfo(
                    quantity: "1", productId: "com.example.product", transactionId: "t2", originalTransactionId: "o1",
                    purchaseDateMs: "1702000000000", originalPurchaseDateMs: "1699000000000",
                    expiresDateMs: "1704600000000", isTrialPeriod: "false", isInIntroOfferPeriod: "false",
                    isUpgraded: "false", inAppOwnershipType: .purchased),
                LatestReceiptInfo(
                    quantity: "1", productId: "com.example.product", transactionId: "t1", originalTransactionId: "o1",
                    purchaseDateMs: "1699000000000", expiresDateMs: "1702000000000", isTrialPeriod: "true"),
            ],
            pendingRenewalInfo: [
                PendingRenewalInfo(
                    originalTransactionId: "o1", productId: "com.example.product",
                    autoRenewProductId: "com.example.product", autoRenewStatus: "1", isInBillingRetryPeriod: "0")
            ]))

    @Test func v1NotificationMapsToReceiptEntriesPendingRenewalAndNotification() throws {
        let facts = try app.facts(fromV1: Self.v1Body)
        #expect(facts.count == 4)
        #expect(
            facts[0]
                == .v1Notification(
                    V1NotificationFact(
                        type: .didRenew, date: 1_702_000_000_000, environment: .production, originalTransactionId: "o1",
                        transactionId: "t2", productId: "com.example.product", autoRenewStatus: true)))
        guard case .receiptEntry(let trial) = facts[2] else {
            Issue.record("expected a receipt entry")
            return
        }
        #expect(trial.isTrialPeriod)
        #expect(trial.receiptDate == 1_702_000_000_000)
        #expect(
            facts[3]
                == .pendingRenewal(
                    PendingRenewalFact(
                        originalTransactionId: "o1", productId: "com.example.product",
                        autoRenewProductId: "com.example.product", autoRenewStatus: true, isInBillingRetryPeriod: false,
                        receiptDate: 1_702_000_000_000, environment: .production)))
        // A repeated delivery maps to the same facts.
        #expect(try app.facts(fromV1: Self.v1Body) == facts)
        // And the engine sees an active subscription granting "pro".
        let state = evaluate(facts: facts, policy: app.policy, now: 1_703_000_000_000)
        #expect(state.entitlement("pro")?.status == .active)
    }

    /// `v1Body` as Apple sends it when the renewal of its latest period (t2, ending 1_704_600_000_000)
    /// fails: same receipt entries, pending renewal in billing retry, `grace` as Apple's grace date.
    static func v1FailureBody(grace: Int64? = nil) -> ResponseBodyV1 {
        var body = v1Body
        body.notificationType = .didFailToRenew
        body.autoRenewStatusChangeDateMs = nil
        body.unifiedReceipt?.pendingRenewalInfo = [
            PendingRenewalInfo(
                originalTransactionId: "o1", productId: "com.example.product",
                autoRenewProductId: "com.example.product", autoRenewStatus: "1", expirationIntent: "2",
                isInBillingRetryPeriod: "1", gracePeriodExpiresDateMs: grace.map(String.init))
        ]
        return body
    }

    @Test(arguments: [nil, 1_704_600_000_000 + 16 * 86_400_000] as [Int64?])
    func v1BillingFailureIsDatedAtTheEndOfThePeriodThatFailed(grace: Int64?) throws {
        let expires: Int64 = 1_704_600_000_000
        let day: Int64 = 86_400_000
        let renewed = try app.facts(fromV1: Self.v1Body)
        let failed = try app.facts(fromV1: Self.v1FailureBody(grace: grace))
        // The body's newest date is the period's purchase, where DID_RENEW's success lies; the
        // failure happened when the period ended unrenewed.
        guard case .v1Notification(let note) = failed[0], case .pendingRenewal(let pending) = failed[3] else {
            Issue.record("expected a V1 notification and a pending renewal")
            return
        }
        #expect(note.type == .didFailToRenew && note.date == expires)
        #expect(pending.receiptDate == expires && pending.isInBillingRetryPeriod == true)
        // The receipt entries' versions keep the body's newest date.
        guard case .receiptEntry(let entry) = failed[1] else {
            Issue.record("expected a receipt entry")
            return
        }
        #expect(entry.receiptDate == 1_702_000_000_000)
        // A retried delivery of the same body maps to the same facts.
        #expect(try app.facts(fromV1: Self.v1FailureBody(grace: grace)) == failed)

        let policy = app.policy  // fallback grace: 6 days
        let graceEnd = grace ?? expires + 6 * day
        for facts in [renewed + failed, failed + renewed, failed.reversed() + renewed + failed] {
            let inGrace = evaluate(facts: facts, policy: policy, now: expires + day)
            #expect(inGrace.entitlement("pro")?.status == .gracePeriod)
            #expect(inGrace.entitlement("pro")?.active == true)
            #expect(inGrace.entitlement("pro")?.gracePeriodExpiresAt == graceEnd)
            #expect(inGrace.entitlement("pro")?.billingIssueDetectedAt == expires)
            let retrying = evaluate(facts: facts, policy: policy, now: graceEnd + day)
            #expect(retrying.entitlement("pro")?.status == .billingRetry)
            #expect(retrying.entitlement("pro")?.active == false)
            #expect(evaluate(facts: facts, policy: policy, now: expires + 61 * day).entitlement("pro")?.status == .expired)
        }
    }

    @Test func receiptWithPreorderGivesAnAppTransactionFact() {
        let response = VerifyReceiptResponse(
            status: 0, environment: .sandbox,
            receipt: LegacyReceipt(
                bundleId: "com.example", originalApplicationVersion: "1.0", receiptCreationDateMs: "1700000000000",
                originalPurchaseDateMs: "1690000000000", preorderDateMs: "1680000000000",
                inApp: [LatestReceiptInfo(productId: "lifetime", transactionId: "n1", originalTransactionId: "n1", purchaseDateMs: "1690000000000")]),
            latestReceiptInfo: [LatestReceiptInfo(productId: "lifetime", transactionId: "n1", originalTransactionId: "n1", purchaseDateMs: "1690000000000")])
        let facts = app.facts(fromReceipt: response)
        #expect(facts.count == 2)
        #expect(
            facts[0]
                == .appTransaction(
                    AppTransactionFact(
                        originalPurchaseDate: 1_690_000_000_000, preorderDate: 1_680_000_000_000,
                        originalApplicationVersion: "1.0", signedDate: 1_700_000_000_000, environment: .sandbox)))
        let state = evaluate(facts: facts, policy: app.policy, now: 1_700_000_000_000, environment: .sandbox)
        #expect(state.preorder.isPreordered)
        #expect(state.entitlement("extras")?.active == true)
    }
}
