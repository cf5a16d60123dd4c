import AppStore
import AppStoreTesting
import struct Entitlements.NotificationType
import struct Entitlements.V1NotificationType
import struct Entitlements.NotificationSubtype
import struct Entitlements.OfferDiscountType
import struct Entitlements.RevocationType
import struct Entitlements.TransactionReason
import Foundation
import Testing

@Suite("Signed models: verification fields and round trips")
struct SignedModelTests {
    static let transaction = JWSTransactionDecodedPayload(
        originalTransactionId: "1000", transactionId: "1001", webOrderLineItemId: "2000", bundleId: "com.example",
        productId: "monthly", subscriptionGroupIdentifier: "g1", purchaseDate: 1_700_000_000_000,
        originalPurchaseDate: 1_690_000_000_000, expiresDate: 1_702_592_000_000, quantity: 1,
        type: .autoRenewableSubscription, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
        inAppOwnershipType: .familyShared, signedDate: 1_700_000_000_123, revocationReason: .other,
        revocationDate: 1_701_000_000_000, revocationType: .familyRevoke, revocationPercentage: 100_000,
        isUpgraded: false, offerType: .winBackOffer, offerIdentifier: "wb1", offerDiscountType: .oneTime,
        offerPeriod: "P1M", environment: .sandbox, storefront: "FRA", storefrontId: "143442",
        transactionReason: .renewal, currency: "EUR", price: 4_990, appTransactionId: "704",
        advancedCommerceInfo: .object(["period": .string("P1M"), "estimatedTax": .integer(12), "rate": .double(0.2)]),
        billingPlanType: .billedUpfront,
        commitmentInfo: TransactionCommitmentInfo(
            billingPeriodNumber: 1, commitmentExpiresDate: 1_731_536_000_000, commitmentPrice: 59_880,
            totalBillingPeriods: 12),
        previousOriginalTransactionId: "999")

    static let renewal = JWSRenewalInfoDecodedPayload(
        originalTransactionId: "1000", autoRenewProductId: "yearly", productId: "monthly", autoRenewStatus: .off,
        expirationIntent: .billingError, isInBillingRetryPeriod: true, gracePeriodExpiresDate: 1_702_000_000_000,
        priceIncreaseStatus: .customerConsentedOrWasNotifiedWithoutNeedingConsent, offerType: .offerCode,
        offerIdentifier: "code", offerDiscountType: .freeTrial, offerPeriod: "P1W", signedDate: 1_700_000_000_456,
        environment: .production, recentSubscriptionStartDate: 1_690_000_000_000, renewalDate: 1_702_592_000_000,
        currency: "EUR", renewalPrice: 4_990, eligibleWinBackOfferIds: ["a", "b"],
        appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", appTransactionId: "704",
        advancedCommerceInfo: .array([.null, .bool(true)]),
        commitmentInfo: RenewalCommitmentInfo(
            commitmentAutoRenewProductId: "yearly", commitmentAutoRenewStatus: .on,
            commitmentRenewalBillingPlanType: .monthly, commitmentRenewalDate: 1_731_536_000_000,
            commitmentRenewalPrice: 59_880),
        renewalBillingPlanType: .monthly)

    static let appTransaction = AppTransaction(
        receiptType: .production, appAppleId: 1234, bundleId: "com.example", applicationVersion: "2.0",
        versionExternalIdentifier: 77, receiptCreationDate: 1_700_000_000_000, originalPurchaseDate: 1_600_000_000_000,
        originalApplicationVersion: "1.0", deviceVerification: "dv", deviceVerificationNonce: "nonce",
        preorderDate: 1_599_000_000_000, appTransactionId: "704", originalPlatform: .visionOS)

    @Test func transactionRoundTrips() throws {
        #expect(try roundTrip(Self.transaction) == Self.transaction)
        #expect(Self.transaction.verificationSignedDate == 1_700_000_000_123)
        #expect(Self.transaction.verificationEnvironment == .sandbox)
        #expect(Self.transaction.verificationBundleId == "com.example")
    }

    @Test func renewalInfoRoundTrips() throws {
        #expect(try roundTrip(Self.renewal) == Self.renewal)
        #expect(Self.renewal.verificationEnvironment == .production)
        #expect(Self.renewal.verificationBundleId == nil)
        #expect(Self.renewal.verificationAppAppleId == nil)
    }

    @Test func appTransactionRoundTrips() throws {
        #expect(try roundTrip(Self.appTransaction) == Self.appTransaction)
        #expect(Self.appTransaction.verificationSignedDate == 1_700_000_000_000)
        #expect(Self.appTransaction.verificationAppAppleId == 1234)
    }

    @Test(arguments: [
        ResponseBodyV2DecodedPayload(
            notificationType: .didRenew, notificationUUID: "u1",
            data: NotificationData(
                environment: .production, appAppleId: 1234, bundleId: "com.example", bundleVersion: "7",
                signedTransactionInfo: "t", signedRenewalInfo: "r", status: .active,
                consumptionRequestReason: .legal),
            version: "2.0", signedDate: 1_700_000_000_000),
        ResponseBodyV2DecodedPayload(
            notificationType: .renewalExtension, subtype: .summary, notificationUUID: "u2",
            summary: Summary(
                environment: .sandbox, appAppleId: 5, bundleId: "com.example", productId: "p",
                requestIdentifier: "r", storefrontCountryCodes: ["USA"], succeededCount: 1, failedCount: 0),
            version: "2.0", signedDate: 1),
        ResponseBodyV2DecodedPayload(
            notificationType: .externalPurchaseToken, subtype: .created, notificationUUID: "u3",
            externalPurchaseToken: ExternalPurchaseToken(
                externalPurchaseId: "SANDBOX_1", tokenCreationDate: 2, appAppleId: 6, bundleId: "com.example",
                tokenType: .acquisition, tokenExpirationDate: 3),
            version: "2.0", signedDate: 2),
        ResponseBodyV2DecodedPayload(
            notificationType: .rescindConsent, notificationUUID: "u4",
            appData: AppData(
                appAppleId: 7, bundleId: "com.example", environment: .xcode, signedAppTransactionInfo: "a"),
            version: "2.0", signedDate: 3),
    ])
    func notificationRoundTrips(payload: ResponseBodyV2DecodedPayload) throws {
        #expect(try roundTrip(payload) == payload)
        #expect(payload.verificationBundleId == "com.example")
        #expect(payload.verificationAppAppleId != nil)
        #expect(payload.verificationEnvironment != nil)
    }

    @Test func notificationIdentityPrefersDataThenSummaryThenTokenThenAppData() {
        var payload = ResponseBodyV2DecodedPayload(
            summary: Summary(environment: .sandbox, appAppleId: 2, bundleId: "summary"),
            externalPurchaseToken: ExternalPurchaseToken(externalPurchaseId: "x", appAppleId: 3, bundleId: "token"),
            appData: AppData(appAppleId: 4, bundleId: "app", environment: .xcode))
        #expect(payload.verificationBundleId == "summary")
        #expect(payload.verificationEnvironment == .sandbox)
        payload.summary = nil
        #expect(payload.verificationBundleId == "token")
        #expect(payload.verificationEnvironment == .production)
        payload.externalPurchaseToken = nil
        #expect(payload.verificationAppAppleId == 4)
        payload.appData = nil
        #expect(payload.verificationBundleId == nil && payload.verificationEnvironment == nil)
        payload.data = NotificationData(environment: .localTesting, appAppleId: 1, bundleId: "data")
        #expect(payload.verificationBundleId == "data" && payload.verificationAppAppleId == 1)
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: ["signedTransaction", "signedTransactionWithRevocation", "signedRenewalInfo", "appTransaction",
                      "signedNotification", "signedSummaryNotification", "signedRescindConsentNotification",
                      "signedExternalPurchaseTokenNotification"])
    func appleFixturesSurviveReencoding(name: String) throws {
        let data = try AppleFixtures.model(name)
        switch name {
        case "signedTransaction", "signedTransactionWithRevocation":
            let value = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: data)
            #expect(try roundTrip(value) == value)
        case "signedRenewalInfo":
            let value = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: data)
            #expect(try roundTrip(value) == value)
        case "appTransaction":
            let value = try AppStoreJSON.decode(AppTransaction.self, from: data)
            #expect(try roundTrip(value) == value)
        default:
            let value = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: data)
            #expect(try roundTrip(value) == value)
        }
    }
}

@Suite("App Store Server API requests")
struct APIRequestTests {
    @Test func requestsEncodeWithApplesKeys() throws {
        #expect(
            try encodedString(
                ExtendRenewalDateRequest(
                    extendByDays: 30, extendReasonCode: .customerSatisfaction, requestIdentifier: "r"))
                == #"{"extendByDays":30,"extendReasonCode":1,"requestIdentifier":"r"}"#)
        #expect(
            try encodedString(
                NotificationHistoryRequest(
                    startDate: 1_698_148_900_000, endDate: 1_698_148_950_000, notificationType: .subscribed,
                    notificationSubtype: .initialBuy, onlyFailures: true))
                == #"{"endDate":1698148950000,"notificationSubtype":"INITIAL_BUY","notificationType":"SUBSCRIBED","#
                + #""onlyFailures":true,"startDate":1698148900000}"#)
        #expect(
            try encodedString(UpdateAppAccountTokenRequest(appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
                == #"{"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138"}"#)
        let mass = MassExtendRenewalDateRequest(
            extendByDays: 3, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: "m",
            storefrontCountryCodes: ["USA"], productId: "p")
        #expect(try roundTrip(mass) == mass)
        let consumption = ConsumptionRequest(
            customerConsented: true, consumptionStatus: .partiallyConsumed, platform: .apple,
            sampleContentProvided: false, deliveryStatus: .deliveredAndWorkingProperly, appAccountToken: "",
            accountTenure: .over365Days, playTime: .hours1To6,
            lifetimeDollarsRefunded: .usd0, lifetimeDollarsPurchased: .usd2000OrMore,
            userStatus: .active, refundPreference: .preferDecline)
        #expect(try roundTrip(consumption) == consumption)
        #expect(try encodedString(consumption).contains(#""refundPreference":2"#))
    }
}

@Suite("V1 notifications and verifyReceipt")
struct LegacyModelTests {
    static let notificationBody = """
        {
          "notification_type": "DID_CHANGE_RENEWAL_STATUS",
          "password": "secret",
          "environment": "PROD",
          "bid": "com.example",
          "bvrs": "42",
          "auto_renew_adam_id": "1234567",
          "auto_renew_status": "false",
          "auto_renew_product_id": "monthly",
          "auto_renew_status_change_date_ms": "1616411598724",
          "auto_renew_status_change_date": "2021-03-22 11:13:18 Etc/GMT",
          "expiration_intent": 1,
          "unified_receipt": {
            "environment": "Production",
            "status": 0,
            "latest_receipt": "MIIbase64",
            "latest_receipt_info": [
              {
                "quantity": "1", "product_id": "monthly", "transaction_id": "1001",
                "original_transaction_id": "1000", "web_order_line_item_id": "2000",
                "subscription_group_identifier": "g1",
                "purchase_date_ms": "1616411598000", "original_purchase_date_ms": "1613733198000",
                "expires_date_ms": "1619089998000", "cancellation_date_ms": "not-a-date",
                "cancellation_reason": "1",
                "is_trial_period": "false", "is_in_intro_offer_period": "true", "is_upgraded": "maybe",
                "in_app_ownership_type": "PURCHASED", "promotional_offer_id": "promo",
                "offer_code_ref_name": "code", "app_account_token": "7e3fb20b-4cdb-47cc-936d-99d65f608138"
              }
            ],
            "pending_renewal_info": [
              {
                "original_transaction_id": "1000", "product_id": "monthly", "auto_renew_product_id": "yearly",
                "auto_renew_status": "0", "expiration_intent": "2", "is_in_billing_retry_period": "1",
                "grace_period_expires_date_ms": "1619694798000", "price_consent_status": "1",
                "price_increase_status": "0"
              }
            ]
          }
        }
        """

    @Test func v1NotificationDecodesWithTypedViews() throws {
        let body = try AppStoreJSON.decode(ResponseBodyV1.self, from: json(Self.notificationBody))
        #expect(body.notificationType == .didChangeRenewalStatus)
        #expect(body.password == "secret")
        #expect(body.environment == .prod)
        #expect(body.environment?.appStoreEnvironment == .production)
        #expect(body.bid == "com.example" && body.bvrs == "42")
        #expect(body.autoRenewAdamId == "1234567")
        #expect(body.autoRenewStatus == "false")
        #expect(body.isAutoRenewEnabled == false)
        #expect(body.autoRenewProductId == "monthly")
        #expect(body.autoRenewStatusChangeDateMs == "1616411598724")
        #expect(body.autoRenewStatusChangeDate == 1_616_411_598_724)
        #expect(body.expirationIntent == "1")
        #expect(body.expirationIntentValue == .customerCancelled)

        let receipt = try #require(body.unifiedReceipt)
        #expect(receipt.environment == .production)
        #expect(receipt.status == 0 && receipt.statusValue == .valid)
        #expect(receipt.latestReceipt == "MIIbase64")
        let entry = try #require(receipt.latestReceiptInfo?.first)
        #expect(entry.quantity == "1" && entry.quantityValue == 1)
        #expect(entry.productId == "monthly")
        #expect(entry.transactionId == "1001" && entry.originalTransactionId == "1000")
        #expect(entry.webOrderLineItemId == "2000")
        #expect(entry.subscriptionGroupIdentifier == "g1")
        #expect(entry.purchaseDate == 1_616_411_598_000)
        #expect(entry.originalPurchaseDate == 1_613_733_198_000)
        #expect(entry.expiresDate == 1_619_089_998_000)
        #expect(entry.cancellationDateMs == "not-a-date")
        #expect(entry.cancellationDate == nil)
        #expect(entry.cancellationReasonValue == .appIssue)
        #expect(entry.isTrialPeriodValue == false)
        #expect(entry.isInIntroOfferPeriodValue == true)
        #expect(entry.isUpgraded == "maybe" && entry.isUpgradedValue == nil)
        #expect(entry.inAppOwnershipType == .purchased)
        #expect(entry.promotionalOfferId == "promo" && entry.offerCodeRefName == "code")
        #expect(entry.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")

        let pending = try #require(receipt.pendingRenewalInfo?.first)
        #expect(pending.originalTransactionId == "1000")
        #expect(pending.productId == "monthly" && pending.autoRenewProductId == "yearly")
        #expect(pending.autoRenewStatusValue == .off)
        #expect(pending.expirationIntentValue == .billingError)
        #expect(pending.isInBillingRetryPeriodValue == true)
        #expect(pending.gracePeriodExpiresDate == 1_619_694_798_000)
        #expect(pending.priceConsentStatusValue == .customerConsentedOrWasNotifiedWithoutNeedingConsent)
        #expect(pending.priceIncreaseStatusValue == .customerHasNotResponded)

        #expect(try roundTrip(body) == body)
    }

    @Test(arguments: [
        (#"{"expiration_intent":"3"}"#, ExpirationIntent.customerDidNotConsentToPriceIncrease as ExpirationIntent?),
        (#"{"expiration_intent":5}"#, .other),
        (#"{"expiration_intent":"soon"}"#, nil),
        ("{}", nil),
    ])
    func v1ExpirationIntentAcceptsStringOrNumber(body: String, expected: ExpirationIntent?) throws {
        #expect(try AppStoreJSON.decode(ResponseBodyV1.self, from: json(body)).expirationIntentValue == expected)
    }

    @Test(arguments: [
        ("1616411598724", Int64(1_616_411_598_724) as Int64?),
        ("", nil), (" 1", nil), ("1.5", nil), ("12abc", nil), ("99999999999999999999", nil), ("-5", -5),
    ])
    func v1DateStringsParseOrGiveNil(text: String, expected: Int64?) {
        #expect(LatestReceiptInfo(purchaseDateMs: text).purchaseDate == expected)
    }

    /// Apple's vocabulary is declared once, in the engine: payloads decode straight into its tokens.
    @Test func payloadsDecodeIntoTheEnginesVocabulary() throws {
        let notification = try AppStoreJSON.decode(
            ResponseBodyV2DecodedPayload.self, from: json(#"{"notificationType":"DID_RENEW","subtype":"BILLING_RECOVERY"}"#))
        let type: NotificationType? = notification.notificationType
        let subtype: NotificationSubtype? = notification.subtype
        #expect(type == .didRenew && subtype == .billingRecovery)
        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self,
            from: json(#"{"revocationType":"REFUND_PRORATED","offerDiscountType":"PAY_UP_FRONT","transactionReason":"RENEWAL"}"#))
        let revocation: RevocationType? = transaction.revocationType
        let discount: OfferDiscountType? = transaction.offerDiscountType
        let reason: TransactionReason? = transaction.transactionReason
        #expect(revocation == .refundProrated && discount == .payUpFront && reason == .renewal)
        let v1 = try AppStoreJSON.decode(ResponseBodyV1.self, from: json(#"{"notification_type":"DID_RECOVER"}"#))
        let v1Type: V1NotificationType? = v1.notificationType
        #expect(v1Type == .didRecover)
    }

    @Test(arguments: [("true", true as Bool?), ("false", false), ("1", true), ("0", false), ("yes", nil), ("", nil)])
    func v1FlagsParseOrGiveNil(text: String, expected: Bool?) {
        #expect(ResponseBodyV1(autoRenewStatus: text).isAutoRenewEnabled == expected)
        #expect(LatestReceiptInfo(isTrialPeriod: text).isTrialPeriodValue == expected)
    }

    @Test func unknownV1ValuesAreKept() throws {
        let body = try AppStoreJSON.decode(
            ResponseBodyV1.self, from: json(#"{"notification_type":"RENEWAL","environment":"Staging"}"#))
        #expect(body.notificationType?.rawValue == "RENEWAL")
        #expect(body.notificationType.map(V1NotificationType.allDocumented.contains) == false)
        #expect(body.environment?.rawValue == "Staging")
        #expect(body.environment?.appStoreEnvironment == nil)
        #expect(try encodedString(body) == #"{"environment":"Staging","notification_type":"RENEWAL"}"#)
    }

    @Test func verifyReceiptResponseDecodes() throws {
        let body = json(
            """
            {
              "status": 0, "environment": "Sandbox", "latest_receipt": "MIIlatest",
              "receipt": {
                "receipt_type": "ProductionSandbox", "adam_id": 0, "app_item_id": 0, "bundle_id": "com.example",
                "application_version": "3", "original_application_version": "1.0", "download_id": 0,
                "version_external_identifier": 0,
                "receipt_creation_date_ms": "1676889264000", "request_date_ms": "1684829929749",
                "original_purchase_date_ms": "1672998566000", "preorder_date_ms": "1672000000000",
                "in_app": [{"quantity": "1", "product_id": "lifetime", "transaction_id": "7",
                            "original_transaction_id": "7", "purchase_date_ms": "1676889262000"}]
              },
              "latest_receipt_info": [{"transaction_id": "7", "expires_date_ms": "1677494062000"}],
              "pending_renewal_info": [{"auto_renew_status": "1", "original_transaction_id": "7"}]
            }
            """)
        let response = try AppStoreJSON.decode(VerifyReceiptResponse.self, from: body)
        #expect(response.statusValue == .valid)
        #expect(response.environment == .sandbox)
        #expect(response.environment?.appStoreEnvironment == .sandbox)
        #expect(response.latestReceipt == "MIIlatest")
        #expect(response.isRetryable == nil)
        let receipt = try #require(response.receipt)
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(receipt.adamId == 0 && receipt.appItemId == 0 && receipt.downloadId == 0)
        #expect(receipt.bundleId == "com.example")
        #expect(receipt.applicationVersion == "3" && receipt.originalApplicationVersion == "1.0")
        #expect(receipt.receiptCreationDate == 1_676_889_264_000)
        #expect(receipt.requestDate == 1_684_829_929_749)
        #expect(receipt.originalPurchaseDate == 1_672_998_566_000)
        #expect(receipt.preorderDate == 1_672_000_000_000)
        #expect(receipt.expirationDate == nil)
        #expect(receipt.inApp?.first?.productId == "lifetime")
        #expect(receipt.inApp?.first?.purchaseDate == 1_676_889_262_000)
        #expect(response.latestReceiptInfo?.first?.expiresDate == 1_677_494_062_000)
        #expect(response.pendingRenewalInfo?.first?.autoRenewStatusValue == .on)
        #expect(try roundTrip(response) == response)
    }

    @Test func verifyReceiptStatusesAndRequest() throws {
        let retry = try AppStoreJSON.decode(
            VerifyReceiptResponse.self, from: json(#"{"status":21150,"is-retryable":true}"#))
        #expect(retry.statusValue?.isRetryable == true)
        #expect(retry.statusValue?.isKnown == false)
        #expect(retry.isRetryable == true)
        #expect(VerifyReceiptStatus.serverUnavailable.isRetryable)
        #expect(!VerifyReceiptStatus.sandboxReceiptSentToProduction.isRetryable)
        #expect(VerifyReceiptStatus.sandboxReceiptSentToProduction.rawValue == 21007)
        #expect(
            try encodedString(VerifyReceiptRequest(receiptData: "MII", password: "s", excludeOldTransactions: true))
                == #"{"exclude-old-transactions":true,"password":"s","receipt-data":"MII"}"#)
    }
}
