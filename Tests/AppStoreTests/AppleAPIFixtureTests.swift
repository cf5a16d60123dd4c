import AppStore
import AppStoreTesting
import Foundation
import Testing

@Suite("Apple fixture compatibility: App Store Server API bodies")
struct AppleAPIFixtureTests {
    @Test(.enabled(if: AppleTestData.suitesRun)) func transactionInfoResponses() throws {
        #expect(
            try AppleFixtures.decodeModel(TransactionInfoResponse.self, "transactionInfoResponse").signedTransactionInfo
                == "signed_transaction_info_value")
        #expect(
            try AppleFixtures.decodeModel(AppTransactionInfoResponse.self, "appTransactionInfoResponse")
                .signedAppTransactionInfo == "signed_app_transaction_info_value")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func allSubscriptionStatuses() throws {
        let response = try AppleFixtures.decodeModel(StatusResponse.self, "getAllSubscriptionStatusesResponse")
        #expect(response.environment == .localTesting)
        #expect(response.bundleId == "com.example")
        #expect(response.appAppleId == 5_454_545)
        let groups = try #require(response.data)
        #expect(groups.count == 2)
        #expect(groups[0].subscriptionGroupIdentifier == "sub_group_one")
        #expect(
            groups[0].lastTransactions == [
                LastTransactionsItem(
                    status: .active, originalTransactionId: "3749183", signedTransactionInfo: "signed_transaction_one",
                    signedRenewalInfo: "signed_renewal_one"),
                LastTransactionsItem(
                    status: .revoked, originalTransactionId: "5314314134",
                    signedTransactionInfo: "signed_transaction_two", signedRenewalInfo: "signed_renewal_two"),
            ])
        #expect(groups[1].subscriptionGroupIdentifier == "sub_group_two")
        #expect(groups[1].lastTransactions?.first?.status == .expired)
        #expect(groups[1].lastTransactions?.first?.originalTransactionId == "3413453")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func notificationHistory() throws {
        let response = try AppleFixtures.decodeModel(NotificationHistoryResponse.self, "getNotificationHistoryResponse")
        #expect(response.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a")
        #expect(response.hasMore == true)
        #expect(
            response.notificationHistory == [
                NotificationHistoryResponseItem(
                    signedPayload: "signed_payload_one",
                    sendAttempts: [
                        SendAttemptItem(attemptDate: 1_698_148_900_000, sendAttemptResult: .noResponse),
                        SendAttemptItem(attemptDate: 1_698_148_950_000, sendAttemptResult: .success),
                    ]),
                NotificationHistoryResponseItem(
                    signedPayload: "signed_payload_two",
                    sendAttempts: [
                        SendAttemptItem(attemptDate: 1_698_148_800_000, sendAttemptResult: .circularRedirect)
                    ]),
            ])
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func testNotificationBodies() throws {
        let status = try AppleFixtures.decodeModel(
            CheckTestNotificationResponse.self, "getTestNotificationStatusResponse")
        #expect(status.signedPayload == "signed_payload")
        #expect(status.sendAttempts?.map(\.sendAttemptResult) == [.noResponse, .success])
        #expect(status.sendAttempts?.map(\.attemptDate) == [1_698_148_900_000, 1_698_148_950_000])
        let request = try AppleFixtures.decodeModel(
            SendTestNotificationResponse.self, "requestTestNotificationResponse")
        #expect(request.testNotificationToken == "ce3af791-365e-4c60-841b-1674b43c1609")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func refundHistory() throws {
        let response = try AppleFixtures.decodeModel(RefundHistoryResponse.self, "getRefundHistoryResponse")
        #expect(response.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
        #expect(response.revision == "revision_output")
        #expect(response.hasMore == true)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func transactionHistory() throws {
        let response = try AppleFixtures.decodeModel(HistoryResponse.self, "transactionHistoryResponse")
        #expect(response.revision == "revision_output")
        #expect(response.hasMore == true)
        #expect(response.bundleId == "com.example")
        #expect(response.appAppleId == 323_232)
        #expect(response.environment == .localTesting)
        #expect(response.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func transactionHistoryWithMalformedEnvironmentKeepsRawValue() throws {
        let response = try AppleFixtures.decodeModel(
            HistoryResponse.self, "transactionHistoryResponseWithMalformedEnvironment")
        let environment = try #require(response.environment)
        #expect(environment.rawValue == "LocalTestingxxx")
        #expect(!environment.isKnown)
        #expect(response.appAppleId == 323_232)
    }

    // Python's copy has appAppleId "hi" and hasMore 1; Swift's has appAppleId "blue". Both must be rejected.
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [false, true])
    func transactionHistoryWithMalformedAppAppleIdFails(swiftCopy: Bool) throws {
        let data = try AppleFixtures.model("transactionHistoryResponseWithMalformedAppAppleId", swift: swiftCopy)
        do {
            let decoded = try AppStoreJSON.decode(HistoryResponse.self, from: data)
            Issue.record("decoded a malformed body: \(decoded)")
        } catch {
            #expect(error.typeName == "HistoryResponse")
            #expect(["appAppleId", "hasMore"].contains(error.fieldPath))
            #expect(!error.message.isEmpty)
        }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func orderLookup() throws {
        let response = try AppleFixtures.decodeModel(OrderLookupResponse.self, "lookupOrderIdResponse")
        #expect(response.status == .invalid)
        #expect(response.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func renewalDateExtensions() throws {
        let single = try AppleFixtures.decodeModel(
            ExtendRenewalDateResponse.self, "extendSubscriptionRenewalDateResponse")
        #expect(
            single
                == ExtendRenewalDateResponse(
                    originalTransactionId: "2312412", webOrderLineItemId: "9993", success: true,
                    effectiveDate: 1_698_148_900_000))
        let mass = try AppleFixtures.decodeModel(
            MassExtendRenewalDateResponse.self, "extendRenewalDateForAllActiveSubscribersResponse")
        #expect(mass.requestIdentifier == "758883e8-151b-47b7-abd0-60c4d804c2f5")
        let status = try AppleFixtures.decodeModel(
            MassExtendRenewalDateStatusResponse.self, "getStatusOfSubscriptionRenewalDateExtensionsResponse")
        #expect(
            status
                == MassExtendRenewalDateStatusResponse(
                    requestIdentifier: "20fba8a0-2b80-4a7d-a17f-85c1854727f8", complete: true,
                    completeDate: 1_698_148_900_000, succeededCount: 30, failedCount: 2))
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("apiException", APIErrorCode.generalInternal, true),
        ("apiTooManyRequestsException", .rateLimitExceeded, true),
        ("apiUnknownError", APIErrorCode(rawValue: 9_990_000), false),
        ("invalidTransactionIdError", .invalidTransactionId, true),
        ("invalidAppAccountTokenUUIDError", .invalidAppAccountTokenUUID, true),
        ("familyTransactionNotSupportedError", .familyTransactionNotSupported, true),
        ("transactionIdNotOriginalTransactionId", .transactionIdIsNotOriginalTransactionId, true),
        ("transactionIdNotFoundError", .transactionIdNotFound, true),
        ("appTransactionDoesNotExistError", .appTransactionDoesNotExist, true),
    ])
    func errorBodies(file: String, code: APIErrorCode, known: Bool) throws {
        let body = try AppleFixtures.decodeModel(APIErrorResponse.self, file)
        #expect(body.errorCode == code)
        #expect(body.errorCode?.isKnown == known)
        #expect(body.errorMessage?.isEmpty == false)
    }

    @Test func errorCodeNumbersMatchApple() {
        #expect(APIErrorCode.invalidTransactionId.rawValue == 4_000_006)
        #expect(APIErrorCode.invalidAppAccountTokenUUID.rawValue == 4_000_183)
        #expect(APIErrorCode.familyTransactionNotSupported.rawValue == 4_000_185)
        #expect(APIErrorCode.transactionIdIsNotOriginalTransactionId.rawValue == 4_000_187)
        #expect(APIErrorCode.transactionIdNotFound.rawValue == 4_040_010)
        #expect(APIErrorCode.appTransactionDoesNotExist.rawValue == 4_040_019)
        #expect(APIErrorCode.rateLimitExceeded.rawValue == 4_290_000)
        #expect(APIErrorCode.generalInternal.rawValue == 5_000_000)
    }
}
