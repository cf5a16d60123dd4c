import EntitledCrypto
import Foundation
import GooglePlay
import Testing

@Suite struct ModelTests {
    static func push(_ notification: String, messageId: String = "136969346945") -> [UInt8] {
        json("""
            {"message":{"attributes":{"key":"value"},"data":"\(Base64.encode(Array(notification.utf8)))",
            "messageId":"\(messageId)","message_id":"\(messageId)","publishTime":"2026-01-02T03:04:05.678Z",
            "publish_time":"2026-01-02T03:04:05.678Z"},"subscription":"projects/myproject/subscriptions/mysubscription"}
            """)
    }

    @Test func pushEnvelopeAndSubscriptionNotification() throws {
        let body = Self.push("""
            {"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1503349566168",
            "subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"PURCHASE_TOKEN","subscriptionId":"monthly001"}}
            """)
        let envelope = try PubSubPushEnvelope.decode(body)
        #expect(envelope.message.messageId == "136969346945")
        #expect(envelope.subscription == "projects/myproject/subscriptions/mysubscription")
        #expect(envelope.message.publishTime == GoogleTimestamp(rfc3339: "2026-01-02T03:04:05.678Z"))
        let notification = try envelope.message.developerNotification()
        #expect(notification.packageName == "com.some.thing")
        #expect(notification.eventTimeMillis.value == 1_503_349_566_168)
        guard case .subscription(let sub) = notification.kind else { Issue.record("not a subscription notification"); return }
        #expect(sub.notificationType == .purchased)
        #expect(sub.notificationType.name == "SUBSCRIPTION_PURCHASED")
        #expect(sub.purchaseToken == "PURCHASE_TOKEN")
        #expect(sub.subscriptionId == "monthly001")
    }

    @Test func everyNotificationKindDecodes() throws {
        let cases: [(String, (DeveloperNotification.Kind) -> Bool)] = [
            (#""oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"T","sku":"coins"}"#,
             { if case .oneTimeProduct(let n) = $0 { n.notificationType == .purchased && n.sku == "coins" } else { false } }),
            (#""voidedPurchaseNotification":{"purchaseToken":"T","orderId":"GS.0000-0000-0000","productType":1,"refundType":2}"#,
             { if case .voidedPurchase(let n) = $0 { n.productType == .subscription && n.refundType == .quantityBasedPartialRefund } else { false } }),
            (#""pendingRefundReviewNotification":{"version":"1.0","pendingRefundToken":"R","orderId":"GPA.1..2","refundReason":7,"obfuscatedAccountId":"A","obfuscatedProfileId":"P"}"#,
             { if case .pendingRefundReview(let n) = $0 {
                 n.pendingRefundToken == "R" && n.orderId == "GPA.1..2" && n.refundReason == 7 && n.obfuscatedAccountId == "A" && n.obfuscatedProfileId == "P"
             } else { false } }),
            (#""pendingRefundReviewNotification":{"pendingRefundToken":"R","orderId":"GPA.1"}"#,
             { if case .pendingRefundReview(let n) = $0 { n.refundReason == nil && n.obfuscatedAccountId == nil } else { false } }),
            (#""testNotification":{"version":"1.0"}"#, { if case .test = $0 { true } else { false } }),
        ]
        for (member, check) in cases {
            let notification = try DeveloperNotification.decode(
                json(#"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1503349566168","# + member + "}"))
            let kind = try #require(notification.kind)
            #expect(check(kind), "\(member)")
        }
    }

    @Test func unknownNotificationTypesPassThrough() throws {
        let notification = try DeveloperNotification.decode(json("""
            {"version":"1.0","packageName":"p","eventTimeMillis":1,"subscriptionNotification":{"notificationType":99,"purchaseToken":"T"}}
            """))
        guard case .subscription(let sub) = notification.kind else { Issue.record("kind"); return }
        #expect(sub.notificationType.rawValue == 99)
        #expect(sub.notificationType.name == nil)
        #expect(SubscriptionNotificationType.priceStepUpConsentUpdated.name == "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED")
    }

    @Test(arguments: [
        // none or two notification members
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1"}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","testNotification":{},"subscriptionNotification":{"notificationType":1,"purchaseToken":"T"}}"#,
        // required members missing or of the wrong type
        #"{"version":"1.0","eventTimeMillis":"1","testNotification":{}}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"soon","testNotification":{}}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","subscriptionNotification":{"notificationType":"4","purchaseToken":"T"}}"#,
        #"{"version":"1.0","packageName":"","eventTimeMillis":"1","testNotification":{}}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","oneTimeProductNotification":{"notificationType":1,"purchaseToken":"","sku":"s"}}"#,
        // a refund review without its token or order, or with one that cannot be quoted
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","pendingRefundReviewNotification":{"orderId":"GPA.1"}}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","pendingRefundReviewNotification":{"pendingRefundToken":"R","orderId":""}}"#,
        #"{"version":"1.0","packageName":"p","eventTimeMillis":"1","pendingRefundReviewNotification":{"pendingRefundToken":"R S","orderId":"GPA.1"}}"#,
        "[]", "null", "", "{", "\u{0}",
    ])
    func malformedNotificationsAreRefused(body: String) {
        #expect(throws: GooglePlayError(.malformedNotification, "")) { try DeveloperNotification.decode(json(body)) }
    }

    @Test func malformedEnvelopesAreRefused() {
        let bodies = [
            #"{"subscription":"s"}"#, #"{"message":{"data":"e30="},"subscription":"s"}"#,
            #"{"message":{"messageId":"","data":"e30="},"subscription":"s"}"#,
            String(repeating: "[", count: 100_000),
            #"{"message":{"messageId":"1","data":"e30="},"subscription":"s","pad":""# + String(repeating: "x", count: 70_000) + #""}"#,
        ]
        for body in bodies {
            #expect(throws: GooglePlayError(.malformedNotification, "")) { try PubSubPushEnvelope.decode(json(body)) }
        }
        let notBase64 = #"{"message":{"messageId":"1","data":"%%%"},"subscription":"s"}"#
        #expect(throws: GooglePlayError(.malformedNotification, "")) {
            try PubSubPushEnvelope.decode(json(notBase64)).message.developerNotification()
        }
    }

    static let subscriptionV2 = """
        {"kind":"androidpublisher#subscriptionPurchaseV2","regionCode":"US","startTime":"2026-01-01T00:00:00.123456Z",
         "subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","latestOrderId":"GPA.1234-5678-9012-34567",
         "linkedPurchaseToken":"OLD_TOKEN","acknowledgementState":"ACKNOWLEDGEMENT_STATE_PENDING",
         "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"acct-1","obfuscatedExternalProfileId":"prof"},
         "testPurchase":{},
         "lineItems":[{"productId":"premium","expiryTime":"2026-02-01T00:00:00Z",
           "autoRenewingPlan":{"autoRenewEnabled":true,"recurringPrice":{"currencyCode":"USD","units":"9","nanos":990000000}},
           "offerDetails":{"basePlanId":"monthly","offerId":"intro","offerTags":["tag"]},"latestSuccessfulOrderId":"GPA.1"},
          {"productId":"addon","expiryTime":"2026-03-01T00:00:00+01:00","prepaidPlan":{"allowExtendAfterTime":"2026-02-20T00:00:00Z"}}],
         "someFutureField":{"nested":[1,2,3]}}
        """

    @Test func subscriptionPurchaseV2Decodes() throws {
        let purchase = try PlayJSON.decode(
            SubscriptionPurchaseV2.self, from: json(Self.subscriptionV2), maxBytes: SubscriptionPurchaseV2.maximumBytes, code: .malformedResponse)
        #expect(purchase.subscriptionState == .active)
        #expect(purchase.acknowledgementState == .pending)
        #expect(purchase.linkedPurchaseToken == "OLD_TOKEN")
        #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "acct-1")
        #expect(purchase.isTestPurchase)
        #expect(purchase.regionCode == "US")
        #expect(purchase.startTime?.milliseconds == 1_767_225_600_123)
        #expect(purchase.lineItems.count == 2)
        #expect(purchase.lineItems[0].autoRenewingPlan?.autoRenewEnabled == true)
        #expect(purchase.lineItems[0].offerDetails?.basePlanId == "monthly")
        #expect(purchase.lineItems[1].prepaidPlan != nil)
        #expect(purchase.lineItems[1].expiryTime?.milliseconds == 1_772_319_600_000)
        #expect(purchase.expiryTime == purchase.lineItems[1].expiryTime)
        // Encoding and decoding again keeps every modelled member.
        let again = try PlayJSON.decode(
            SubscriptionPurchaseV2.self, from: PlayJSON.encode(purchase), maxBytes: 1 << 20, code: .malformedResponse)
        #expect(again == purchase)
    }

    @Test func productPurchaseAndVoidedPageDecode() throws {
        let product = try PlayJSON.decode(ProductPurchase.self, from: json("""
            {"kind":"androidpublisher#productPurchase","purchaseTimeMillis":"1767225600000","purchaseState":0,"consumptionState":0,
             "orderId":"GPA.9","purchaseType":0,"acknowledgementState":0,"productId":"coins","quantity":3,"regionCode":"DE",
             "obfuscatedExternalAccountId":"acct-1","refundableQuantity":3}
            """), maxBytes: ProductPurchase.maximumBytes, code: .malformedResponse)
        #expect(product.isPurchased && !product.isConsumed && !product.isAcknowledged && product.isTestPurchase)
        #expect(product.purchaseTimeMillis?.value == 1_767_225_600_000)
        let page = try PlayJSON.decode(VoidedPurchasesListResponse.self, from: json("""
            {"pageInfo":{"totalResults":2,"resultPerPage":1000,"startIndex":0},"tokenPagination":{"nextPageToken":"NEXT"},
             "voidedPurchases":[{"kind":"androidpublisher#voidedPurchase","purchaseToken":"T1","purchaseTimeMillis":"1","voidedTimeMillis":"2",
             "orderId":"GPA.1","voidedSource":0,"voidedReason":1,"refundType":1}]}
            """), maxBytes: VoidedPurchasesListResponse.maximumBytes, code: .malformedResponse)
        #expect(page.tokenPagination?.nextPageToken == "NEXT")
        #expect(page.voidedPurchases?.first?.refundType == .fullRefund)
        #expect(page.voidedPurchases?.first?.voidedTimeMillis?.value == 2)
    }

    @Test(arguments: [
        ("2026-01-01T00:00:00Z", Int64(1_767_225_600_000)), ("2026-01-01T00:00:00.5Z", 1_767_225_600_500),
        ("2026-01-01T00:00:00.123456789Z", 1_767_225_600_123), ("2026-01-01T01:00:00+01:00", 1_767_225_600_000),
        ("1970-01-01T00:00:00Z", 0), ("2024-02-29T12:00:00-00:30", 1_709_209_800_000),
    ])
    func timestampsParse(text: String, milliseconds: Int64) {
        #expect(GoogleTimestamp(rfc3339: text)?.milliseconds == milliseconds)
    }

    @Test(arguments: [
        "", "2026-01-01", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:00", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00+0100",
        "2026-01-01T00:00:00Zjunk", "0000-01-01T00:00:00Z", "２０２６-01-01T00:00:00Z",
    ])
    func badTimestampsAreRefused(text: String) {
        #expect(GoogleTimestamp(rfc3339: text) == nil)
    }

    @Test func timestampsPrintAsTheyParse() {
        for ms: Int64 in [0, 1_767_225_600_123, 253_402_300_799_999, 951_782_400_000] {
            let text = GoogleTimestamp(milliseconds: ms).description
            #expect(GoogleTimestamp(rfc3339: text)?.milliseconds == ms, "\(text)")
        }
        // Extreme values print (clamped) rather than trap.
        #expect(GoogleTimestamp(milliseconds: .min).description == "0001-01-01T00:00:00.000Z")
        #expect(GoogleTimestamp(milliseconds: .max).description == "9999-12-31T23:59:59.999Z")
    }
}
