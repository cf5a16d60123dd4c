import AppStore
import AppStoreTesting
import Foundation
import Testing

/// Apple's own test payloads (``AppleTestData``: `../shared/apple-fixtures` next to the package root).
enum AppleFixtures {
    static let root = AppleTestData.root
    static let pythonResources = AppleTestData.pythonResources
    static let swiftResources = root.appendingPathComponent(
        "app-store-server-library-swift/Tests/AppStoreServerLibraryTests/resources")

    /// The bytes of `models/<name>.json` from the Python copy (the Swift copy when `swift` is set).
    static func model(_ name: String, swift: Bool = false) throws -> Data {
        let base = swift ? swiftResources : pythonResources
        return try Data(contentsOf: base.appendingPathComponent("models/\(name).json"))
    }

    /// The payload segment of a compact JWS fixture (`xcode/…`, `mock_signed_data/…`), base64url-decoded.
    static func jwsPayload(_ relativePath: String) throws -> Data {
        let text = try String(contentsOf: pythonResources.appendingPathComponent(relativePath), encoding: .utf8)
        let segments = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        try #require(segments.count == 3, "\(relativePath) is not a compact JWS")
        return try #require(base64URLDecode(String(segments[1])), "\(relativePath) payload is not base64url")
    }

    static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func decodeModel<T: Decodable>(_ type: T.Type, _ name: String, swift: Bool = false) throws -> T {
        try AppStoreJSON.decode(type, from: model(name, swift: swift))
    }
}

@Suite("Apple fixture compatibility: V2 notifications")
struct AppleNotificationFixtureTests {
    @Test(.enabled(if: AppleTestData.suitesRun)) func fixturesArePresent() {
        #expect(FileManager.default.fileExists(atPath: AppleFixtures.root.appendingPathComponent("INDEX.md").path))
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func signedNotification() throws {
        let payload = try AppleFixtures.decodeModel(ResponseBodyV2DecodedPayload.self, "signedNotification")
        #expect(payload.notificationType == .subscribed)
        #expect(payload.subtype == .initialBuy)
        #expect(payload.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(payload.version == "2.0")
        #expect(payload.signedDate == 1_698_148_900_000)
        let data = try #require(payload.data)
        #expect(data.environment == .localTesting)
        #expect(data.appAppleId == 41234)
        #expect(data.bundleId == "com.example")
        #expect(data.bundleVersion == "1.2.3")
        #expect(data.signedTransactionInfo == "signed_transaction_info_value")
        #expect(data.signedRenewalInfo == "signed_renewal_info_value")
        #expect(data.status == .active)
        #expect(data.consumptionRequestReason == nil)
        #expect(payload.summary == nil && payload.externalPurchaseToken == nil && payload.appData == nil)
        #expect(payload.verificationSignedDate == 1_698_148_900_000)
        #expect(payload.verificationEnvironment == .localTesting)
        #expect(payload.verificationBundleId == "com.example")
        #expect(payload.verificationAppAppleId == 41234)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func consumptionRequestNotification() throws {
        let payload = try AppleFixtures.decodeModel(
            ResponseBodyV2DecodedPayload.self, "signedConsumptionRequestNotification")
        #expect(payload.notificationType == .consumptionRequest)
        #expect(payload.subtype == nil)
        #expect(payload.data?.consumptionRequestReason == .unintendedPurchase)
        #expect(payload.data?.status == .active)
        #expect(payload.data?.appAppleId == 41234)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func summaryNotification() throws {
        let payload = try AppleFixtures.decodeModel(ResponseBodyV2DecodedPayload.self, "signedSummaryNotification")
        #expect(payload.notificationType == .renewalExtension)
        #expect(payload.subtype == .summary)
        #expect(payload.data == nil)
        let summary = try #require(payload.summary)
        #expect(summary.environment == .localTesting)
        #expect(summary.appAppleId == 41234)
        #expect(summary.bundleId == "com.example")
        #expect(summary.productId == "com.example.product")
        #expect(summary.requestIdentifier == "efb27071-45a4-4aca-9854-2a1e9146f265")
        #expect(summary.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(summary.succeededCount == 5)
        #expect(summary.failedCount == 2)
        #expect(payload.verificationEnvironment == .localTesting)
        #expect(payload.verificationBundleId == "com.example")
        #expect(payload.verificationAppAppleId == 41234)
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        (
            "signedExternalPurchaseTokenNotification", "b2158121-7af9-49d4-9561-1f588205523e",
            AppStoreEnvironment.production
        ),
        ("signedExternalPurchaseTokenSandboxNotification", "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e", .sandbox),
    ])
    func externalPurchaseTokenNotification(file: String, externalPurchaseId: String, environment: AppStoreEnvironment)
        throws
    {
        let payload = try AppleFixtures.decodeModel(ResponseBodyV2DecodedPayload.self, file)
        #expect(payload.notificationType == .externalPurchaseToken)
        #expect(payload.subtype == .unreported)
        #expect(payload.signedDate == 1_698_148_900_000)
        let token = try #require(payload.externalPurchaseToken)
        #expect(token.externalPurchaseId == externalPurchaseId)
        #expect(token.tokenCreationDate == 1_698_148_950_000)
        #expect(token.appAppleId == 55555)
        #expect(token.bundleId == "com.example")
        #expect(token.tokenType == nil && token.tokenExpirationDate == nil)
        #expect(token.inferredEnvironment == environment)
        #expect(payload.verificationEnvironment == environment)
        #expect(payload.verificationBundleId == "com.example")
        #expect(payload.verificationAppAppleId == 55555)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func rescindConsentNotification() throws {
        let payload = try AppleFixtures.decodeModel(
            ResponseBodyV2DecodedPayload.self, "signedRescindConsentNotification")
        #expect(payload.notificationType == .rescindConsent)
        #expect(payload.subtype == nil)
        let appData = try #require(payload.appData)
        #expect(appData.appAppleId == 41234)
        #expect(appData.bundleId == "com.example")
        #expect(appData.environment == .localTesting)
        #expect(appData.signedAppTransactionInfo == "signed_app_transaction_info_value")
        #expect(payload.verificationEnvironment == .localTesting)
        #expect(payload.verificationBundleId == "com.example")
        #expect(payload.verificationAppAppleId == 41234)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func appDataDecodedDirectly() throws {
        let appData = try AppleFixtures.decodeModel(AppData.self, "appData")
        #expect(appData.appAppleId == 987_654_321)
        #expect(appData.bundleId == "com.example")
        #expect(appData.environment == .sandbox)
        #expect(appData.signedAppTransactionInfo == "signed-app-transaction-info")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func retentionMessagingRealtimeRequest() throws {
        let request = try AppleFixtures.decodeModel(DecodedRealtimeRequestBody.self, "decodedRealtimeRequest")
        #expect(request.originalTransactionId == "99371282")
        #expect(request.appAppleId == 531_412)
        #expect(request.productId == "com.example.product")
        #expect(request.userLocale == "en-US")
        #expect(request.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(request.environment == .localTesting)
        #expect(request.signedDate == 1_698_148_900_000)
        #expect(request.verificationAppAppleId == 531_412)
        #expect(request.verificationBundleId == nil)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func mockSignedPayloads() throws {
        let test = try AppStoreJSON.decode(
            ResponseBodyV2DecodedPayload.self, from: AppleFixtures.jwsPayload("mock_signed_data/testNotification"))
        #expect(test.notificationType == .test)
        #expect(test.signedDate == 1_681_314_324_000)
        #expect(test.verificationEnvironment == .sandbox)
        #expect(test.verificationAppAppleId == 1234)
        #expect(test.verificationBundleId == "com.example")

        let wrongBundle = try AppStoreJSON.decode(
            ResponseBodyV2DecodedPayload.self, from: AppleFixtures.jwsPayload("mock_signed_data/wrongBundleId"))
        #expect(wrongBundle.verificationBundleId == "com.example.wrong")
        #expect(wrongBundle.verificationSignedDate == nil)

        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self, from: AppleFixtures.jwsPayload("mock_signed_data/transactionInfo"))
        #expect(transaction.environment == .sandbox)
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.signedDate == 1_672_956_154_000)

        let renewal = try AppStoreJSON.decode(
            JWSRenewalInfoDecodedPayload.self, from: AppleFixtures.jwsPayload("mock_signed_data/renewalInfo"))
        #expect(renewal.environment == .sandbox)
        #expect(renewal.signedDate == 1_672_956_154_000)
    }
}

@Suite("Apple fixture compatibility: signed transactions, renewal info, app transactions")
struct AppleSignedDataFixtureTests {
    @Test(.enabled(if: AppleTestData.suitesRun)) func signedTransactionEveryField() throws {
        let transaction = try AppleFixtures.decodeModel(JWSTransactionDecodedPayload.self, "signedTransaction")
        #expect(transaction.transactionId == "23456")
        #expect(transaction.originalTransactionId == "12345")
        #expect(transaction.webOrderLineItemId == "34343")
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.productId == "com.example.product")
        #expect(transaction.subscriptionGroupIdentifier == "55555")
        #expect(transaction.purchaseDate == 1_698_148_900_000)
        #expect(transaction.originalPurchaseDate == 1_698_148_800_000)
        #expect(transaction.expiresDate == 1_698_149_000_000)
        #expect(transaction.quantity == 1)
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.signedDate == 1_698_148_900_000)
        #expect(transaction.revocationReason == .appIssue)
        #expect(transaction.revocationDate == 1_698_148_950_000)
        #expect(transaction.isUpgraded == true)
        #expect(transaction.offerType == .introductoryOffer)
        #expect(transaction.offerIdentifier == "abc.123")
        #expect(transaction.environment == .localTesting)
        #expect(transaction.transactionReason == .purchase)
        #expect(transaction.storefront == "USA")
        #expect(transaction.storefrontId == "143441")
        #expect(transaction.price == 10990)
        #expect(transaction.currency == "USD")
        #expect(transaction.offerDiscountType == .payAsYouGo)
        #expect(transaction.appTransactionId == "71134")
        #expect(transaction.offerPeriod == "P1Y")
        #expect(transaction.billingPlanType == .monthly)
        #expect(transaction.revocationType == nil)
        #expect(transaction.revocationPercentage == nil)
        #expect(transaction.previousOriginalTransactionId == nil)

        let commitment = try #require(transaction.commitmentInfo)
        #expect(commitment.billingPeriodNumber == 3)
        #expect(commitment.commitmentExpiresDate == 1_698_150_000_000)
        #expect(commitment.commitmentPrice == 119_880)
        #expect(commitment.totalBillingPeriods == 12)

        let commerce = try #require(transaction.advancedCommerceInfo)
        #expect(commerce["descriptors"]?["description"]?.stringValue == "Premium Plan")
        #expect(commerce["descriptors"]?["displayName"]?.stringValue == "Premium")
        #expect(commerce["estimatedTax"]?.int64Value == 1500)
        #expect(commerce["period"]?.stringValue == "P1M")
        #expect(commerce["requestReferenceId"]?.stringValue == "ref-12345")
        #expect(commerce["taxCode"]?.stringValue == "TAX_CODE_1")
        #expect(commerce["taxExclusivePrice"]?.int64Value == 8490)
        #expect(commerce["taxRate"]?.stringValue == "0.15")
        let item = try #require(commerce["items"]?[0])
        #expect(item["SKU"]?.stringValue == "com.example.sku.premium")
        #expect(item["description"]?.stringValue == "Premium feature")
        #expect(item["displayName"]?.stringValue == "Premium Feature")
        #expect(item["price"]?.int64Value == 9990)
        #expect(item["revocationDate"]?.int64Value == 1_698_149_200_000)
        let refund = try #require(item["refunds"]?[0])
        #expect(refund["refundAmount"]?.int64Value == 5000)
        #expect(refund["refundDate"]?.int64Value == 1_698_149_100_000)
        #expect(refund["refundReason"]?.stringValue == "FULFILLMENT_ISSUE")
        #expect(refund["refundType"]?.stringValue == "PRORATED")

        #expect(transaction.verificationSignedDate == 1_698_148_900_000)
        #expect(transaction.verificationEnvironment == .localTesting)
        #expect(transaction.verificationBundleId == "com.example")
        #expect(transaction.verificationAppAppleId == nil)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func signedTransactionWithRevocation() throws {
        let transaction = try AppleFixtures.decodeModel(
            JWSTransactionDecodedPayload.self, "signedTransactionWithRevocation")
        #expect(transaction.revocationType == .refundProrated)
        #expect(transaction.revocationPercentage == 50000)
        #expect(transaction.revocationReason == .appIssue)
        #expect(transaction.revocationDate == 1_698_148_950_000)
        #expect(transaction.advancedCommerceInfo == nil)
        #expect(transaction.commitmentInfo == nil)
        #expect(transaction.price == 10990)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func signedRenewalInfoEveryField() throws {
        let renewal = try AppleFixtures.decodeModel(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo")
        #expect(renewal.expirationIntent == .customerCancelled)
        #expect(renewal.originalTransactionId == "12345")
        #expect(renewal.autoRenewProductId == "com.example.product.2")
        #expect(renewal.productId == "com.example.product")
        #expect(renewal.autoRenewStatus == .on)
        #expect(renewal.isInBillingRetryPeriod == true)
        #expect(renewal.priceIncreaseStatus == .customerHasNotResponded)
        #expect(renewal.gracePeriodExpiresDate == 1_698_148_900_000)
        #expect(renewal.offerType == .promotionalOffer)
        #expect(renewal.offerIdentifier == "abc.123")
        #expect(renewal.signedDate == 1_698_148_800_000)
        #expect(renewal.environment == .localTesting)
        #expect(renewal.recentSubscriptionStartDate == 1_698_148_800_000)
        #expect(renewal.renewalDate == 1_698_148_850_000)
        #expect(renewal.renewalPrice == 9990)
        #expect(renewal.currency == "USD")
        #expect(renewal.offerDiscountType == .payAsYouGo)
        #expect(renewal.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(renewal.appTransactionId == "71134")
        #expect(renewal.offerPeriod == "P1Y")
        #expect(renewal.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(renewal.renewalBillingPlanType == .monthly)
        let commitment = try #require(renewal.commitmentInfo)
        #expect(commitment.commitmentAutoRenewProductId == "com.example.product.commitment")
        #expect(commitment.commitmentAutoRenewStatus == .on)
        #expect(commitment.commitmentRenewalBillingPlanType == .monthly)
        #expect(commitment.commitmentRenewalDate == 1_698_149_500_000)
        #expect(commitment.commitmentRenewalPrice == 9990)
        let commerce = try #require(renewal.advancedCommerceInfo)
        #expect(commerce["consistencyToken"]?.stringValue == "token-abc-123")
        #expect(commerce["items"]?[0]?["priceIncreaseInfo"]?["price"]?.int64Value == 12990)
        #expect(commerce["items"]?[0]?["priceIncreaseInfo"]?["dependentSKUs"]?[1]?.stringValue == "com.example.sku.2")
        #expect(renewal.verificationEnvironment == .localTesting)
        #expect(renewal.verificationBundleId == nil)
        #expect(renewal.verificationSignedDate == 1_698_148_800_000)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func appTransactionEveryField() throws {
        let app = try AppleFixtures.decodeModel(AppTransaction.self, "appTransaction")
        #expect(app.receiptType == .localTesting)
        #expect(app.appAppleId == 531_412)
        #expect(app.bundleId == "com.example")
        #expect(app.applicationVersion == "1.2.3")
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.receiptCreationDate == 1_698_148_900_000)
        #expect(app.originalPurchaseDate == 1_698_148_800_000)
        #expect(app.originalApplicationVersion == "1.1.2")
        #expect(app.deviceVerification == "device_verification_value")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate == 1_698_148_700_000)
        #expect(app.appTransactionId == "71134")
        #expect(app.originalPlatform == .iOS)
        #expect(app.verificationSignedDate == 1_698_148_900_000)
        #expect(app.verificationEnvironment == .localTesting)
        #expect(app.verificationBundleId == "com.example")
        #expect(app.verificationAppAppleId == 531_412)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func swiftCopyOfSignedModelsDecodesTheSame() throws {
        #expect(
            try AppleFixtures.decodeModel(JWSTransactionDecodedPayload.self, "signedTransaction", swift: true)
                == AppleFixtures.decodeModel(JWSTransactionDecodedPayload.self, "signedTransaction"))
        #expect(
            try AppleFixtures.decodeModel(AppTransaction.self, "appTransaction", swift: true)
                == AppleFixtures.decodeModel(AppTransaction.self, "appTransaction"))
    }

    // StoreKit in Xcode writes fractional milliseconds; they must come out floored to whole milliseconds.
    @Test(.enabled(if: AppleTestData.suitesRun)) func xcodeAppTransaction() throws {
        let app = try AppStoreJSON.decode(
            AppTransaction.self, from: AppleFixtures.jwsPayload("xcode/xcode-signed-app-transaction"))
        #expect(app.receiptType == .xcode)
        #expect(app.appAppleId == nil)
        #expect(app.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(app.applicationVersion == "1")
        #expect(app.originalApplicationVersion == "1")
        #expect(app.versionExternalIdentifier == nil)
        #expect(app.receiptCreationDate == 1_697_680_122_257)
        #expect(app.originalPurchaseDate == -62_135_769_600_000)
        #expect(app.deviceVerification == "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf")
        #expect(app.deviceVerificationNonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92")
        #expect(app.preorderDate == nil)
        #expect(app.verificationEnvironment == .xcode)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func xcodeTransaction() throws {
        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self, from: AppleFixtures.jwsPayload("xcode/xcode-signed-transaction"))
        #expect(transaction.originalTransactionId == "0")
        #expect(transaction.transactionId == "0")
        #expect(transaction.webOrderLineItemId == "0")
        #expect(transaction.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(transaction.productId == "pass.premium")
        #expect(transaction.subscriptionGroupIdentifier == "6F3A93AB")
        #expect(transaction.purchaseDate == 1_697_679_936_049)
        #expect(transaction.originalPurchaseDate == 1_697_679_936_049)
        #expect(transaction.expiresDate == 1_700_358_336_049)
        #expect(transaction.signedDate == 1_697_679_936_056)
        #expect(transaction.quantity == 1)
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.appAccountToken == nil)
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.revocationDate == nil && transaction.revocationReason == nil)
        #expect(transaction.isUpgraded == false)
        #expect(transaction.offerType == .introductoryOffer)
        #expect(transaction.offerIdentifier == nil)
        #expect(transaction.environment == .xcode)
        #expect(transaction.storefront == "USA")
        #expect(transaction.storefrontId == "143441")
        #expect(transaction.transactionReason == .purchase)
        #expect(transaction.price == nil && transaction.currency == nil)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func xcodeRenewalInfo() throws {
        let renewal = try AppStoreJSON.decode(
            JWSRenewalInfoDecodedPayload.self, from: AppleFixtures.jwsPayload("xcode/xcode-signed-renewal-info"))
        #expect(renewal.expirationIntent == nil)
        #expect(renewal.originalTransactionId == "0")
        #expect(renewal.autoRenewProductId == "pass.premium")
        #expect(renewal.productId == "pass.premium")
        #expect(renewal.autoRenewStatus == .on)
        #expect(renewal.isInBillingRetryPeriod == nil)
        #expect(renewal.priceIncreaseStatus == nil)
        #expect(renewal.gracePeriodExpiresDate == nil)
        #expect(renewal.offerType == nil && renewal.offerIdentifier == nil)
        #expect(renewal.signedDate == 1_697_679_936_711)
        #expect(renewal.environment == .xcode)
        #expect(renewal.recentSubscriptionStartDate == 1_697_679_936_049)
        #expect(renewal.renewalDate == 1_700_358_336_049)
    }
}
