import AppStore
import AppStoreServerAPI
import AppStoreTesting
import Foundation
import Testing

/// Apple's model files for the Server API endpoints, answered by a scripted transport through the
/// client's own decoding.
enum AppleModels {
    static let directory = AppleTestData.pythonResources.appendingPathComponent("models")

    static func body(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name + ".json"), encoding: .utf8)
    }
}

@Suite struct AppleModelFixtureTests {
    /// Error bodies: each becomes a typed error carrying Apple's code.
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("apiException", 500, 5_000_000), ("apiTooManyRequestsException", 429, 4_290_000), ("apiUnknownError", 400, 9_990_000),
        ("appTransactionDoesNotExistError", 404, 4_040_019), ("familyTransactionNotSupportedError", 400, 4_000_185),
        ("invalidAppAccountTokenUUIDError", 400, 4_000_183), ("invalidTransactionIdError", 400, 4_000_006),
        ("transactionIdNotFoundError", 404, 4_040_010), ("transactionIdNotOriginalTransactionId", 400, 4_000_187),
    ])
    func errorBodiesBecomeTypedErrors(name: String, status: Int, code: Int64) async throws {
        let fixture = try Fixture()
        let client = fixture.client(ScriptedTransport([json(status, try AppleModels.body(name))]), settings: .init(retry: .none))
        let error = await apiError { _ = try await client.transactionInfo("1") }
        #expect(error?.appleErrorCode == APIErrorCode(rawValue: code))
        #expect(error?.appleErrorCode?.isKnown == (code != 9_990_000))
    }

    /// Response bodies without signed payloads decode through the endpoints.
    @Test(.enabled(if: AppleTestData.suitesRun)) func unsignedResponsesDecode() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([
            json(200, try AppleModels.body("extendSubscriptionRenewalDateResponse")),
            json(200, try AppleModels.body("extendRenewalDateForAllActiveSubscribersResponse")),
            json(200, try AppleModels.body("getStatusOfSubscriptionRenewalDateExtensionsResponse")),
            json(200, try AppleModels.body("requestTestNotificationResponse")),
        ])
        let client = fixture.client(transport)
        let extended = try await client.extendRenewalDate(
            originalTransactionId: "2312412", days: 3, reason: .serviceIssueOrOutage, requestIdentifier: "r-1")
        #expect(extended.success == true && extended.effectiveDate == 1_698_148_900_000 && extended.webOrderLineItemId == "9993")
        let mass = try await client.massExtendRenewalDate(
            MassExtendRenewalDateRequest(extendByDays: 3, extendReasonCode: .other, requestIdentifier: "r-2", productId: "p"))
        #expect(mass.requestIdentifier == "758883e8-151b-47b7-abd0-60c4d804c2f5")
        let status = try await client.massExtensionStatus(productId: "p", requestIdentifier: "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(status.complete == true && status.succeededCount == 30 && status.failedCount == 2)
        #expect(try await client.requestTestNotification() == "ce3af791-365e-4c60-841b-1674b43c1609")
        #expect(transport.sent.map { "\($0.method) \($0.url.path)" } == [
            "PUT /inApps/v1/subscriptions/extend/2312412", "POST /inApps/v1/subscriptions/extend/mass",
            "GET /inApps/v1/subscriptions/extend/mass/p/20fba8a0-2b80-4a7d-a17f-85c1854727f8", "POST /inApps/v1/notifications/test",
        ])
    }

    /// Responses carrying signed payloads decode, and then their placeholder JWS strings are refused by the
    /// verifier: nothing unverified reaches the caller.
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        "transactionInfoResponse", "appTransactionInfoResponse", "transactionHistoryResponse", "getRefundHistoryResponse",
        "getAllSubscriptionStatusesResponse", "lookupOrderIdResponse", "getNotificationHistoryResponse",
        "getTestNotificationStatusResponse",
    ])
    func signedResponsesDecodeThenFailVerification(name: String) async throws {
        let fixture = try Fixture()
        let client = fixture.client(ScriptedTransport([json(200, try AppleModels.body(name))]))
        let error = await apiError {
            switch name {
            case "transactionInfoResponse": _ = try await client.transactionInfo("1")
            case "appTransactionInfoResponse": _ = try await client.appTransactionInfo("1")
            case "transactionHistoryResponse": _ = try await client.transactionHistory("1")
            case "getRefundHistoryResponse": _ = try await client.refundHistory("1")
            case "getAllSubscriptionStatusesResponse": _ = try await client.subscriptionStatuses("1")
            case "lookupOrderIdResponse": _ = try await client.lookUpOrderId("MTV1")
            case "getNotificationHistoryResponse":
                // A page keeps what verifies and sets each other item aside with its error.
                let page = try await client.notificationHistory(NotificationHistoryRequest(startDate: 0, endDate: 1))
                if let first = page.unverified.first { throw first.error }
            default: _ = try await client.testNotificationStatus("t")
            }
        }
        #expect(error?.code == "APPLE_PAYLOAD_UNVERIFIED", "\(name): \(String(describing: error))")
    }
}
