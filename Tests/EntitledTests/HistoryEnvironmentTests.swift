import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// A Sandbox notification's own row in the history says Sandbox, not "Production".
@Suite struct HistoryEnvironmentTests {
    @Test(arguments: StoredBackend.all)
    func aSandboxNotificationsOwnRowSaysSandbox(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { api in
            let t0 = APIHarness.start
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let signer = TestSigning.ca.signer
            var renewal = Apple.renewal(signed: t0)
            renewal.environment = .sandbox
            let transaction = Apple.transaction(
                purchase: t0 - 86_400_000, expires: t0 + 86_400_000, signed: t0, token: token, environment: .sandbox)
            let payload = ResponseBodyV2DecodedPayload(
                notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "sandbox-1",
                data: NotificationData(
                    environment: .sandbox, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                    signedTransactionInfo: try signer.sign(transaction), signedRenewalInfo: try signer.sign(renewal)),
                version: "2.0", signedDate: t0)
            #expect(try await api.postV2(try signer.sign(payload)).status == 200)

            let history = try await api.send("GET", "/v1/customers/u1/history", auth: APIHarness.reader)
            let items = try #require(history.json["items"] as? [[String: Any]])
            let ownRow = try #require(items.first { ($0["id"] as? String)?.hasPrefix("notification-") == true })
            #expect(ownRow["environment"] as? String == "Sandbox")
            #expect(items.count == 4)
            #expect(items.allSatisfy { $0["environment"] as? String == "Sandbox" })
        }
    }
}
