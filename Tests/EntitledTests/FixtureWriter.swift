import AppStore
import AppStoreTesting
import EntitledConfig
import Entitlements
import Foundation
import Testing

@testable import EntitledServer
@testable import Storage

/// Writes the fixture databases of this target's migration tests with this binary stopped at an
/// older schema version. Runs only with `ENTITLED_WRITE_FIXTURES` set to a folder.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ENTITLED_WRITE_FIXTURES"] != nil))
struct EntitledFixtureWriter {
    static let folder = URL(fileURLWithPath: ProcessInfo.processInfo.environment["ENTITLED_WRITE_FIXTURES"] ?? "/nonexistent")

    @Test func v1Replay() async throws {
        let path = Self.folder.appendingPathComponent("v1_replay_v5.sqlite")
        try? FileManager.default.removeItem(at: path)
        let configuration = APIHarness.configuration()
        var body = FactMapperTests.v1Body
        body.bid = APIHarness.bundleId
        body.password = "v1-shared-secret-value"
        let facts = try configuration.apps[0].facts(fromV1: body)
        var older = StoreConfiguration()
        older.migrationLimit = 5
        let store = try await openStore(url: "sqlite:" + path.path, configuration: older)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        for fact in facts {
            let payload = String(decoding: try encoder.encode(fact), as: UTF8.self)
            try await _StorageFixtures.insertFactRow(
                store, kind: fact.ledgerKind, signed: payload, payload: payload,
                originalTransactionId: fact.ledgerOriginalTransactionId, bundleId: APIHarness.bundleId,
                signedDate: APIHarness.start, receivedAt: APIHarness.start)
        }
        await store.close()
    }

    @Test func reverify() async throws {
        let path = Self.folder.appendingPathComponent("signed_v15.sqlite")
        try? FileManager.default.removeItem(at: path)
        let ca = try TestCertificateAuthority()
        try Data(ca.rootDER).write(to: Self.folder.appendingPathComponent("signed_v15_root.der"))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var options = StoreConfiguration()
        options.migrationLimit = Schema.compressedJSONVersion - 1
        let store = try await openStore(url: "sqlite:" + path.path, configuration: options)
        var configuration = Configuration()
        configuration.database = "sqlite:" + path.path
        configuration.apps = [App(bundleId: APIHarness.bundleId, appAppleId: 1234, environments: ["Production"], appleRootCertificates: [])]
        let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
        let transaction = Apple.transaction(otid: "o1", tid: "t1", purchase: now - 86_400_000, expires: now + 86_400_000)
        let signedTransaction = try ca.signer.sign(transaction)
        let signedPayload = try ca.signer.sign(
            ResponseBodyV2DecodedPayload(
                notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "n1",
                data: NotificationData(
                    environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                    signedTransactionInfo: signedTransaction),
                version: "2.0", signedDate: now - 86_400_000))
        let fact = TransactionFact(
            transactionId: "t1", originalTransactionId: "o1", productId: "pro.monthly", purchaseDate: now - 86_400_000,
            expiresDate: now + 86_400_000, productType: .autoRenewable, signedDate: now - 86_400_000)
        let notification = NotificationFact(type: "SUBSCRIBED", notificationUUID: "n1", signedDate: now - 86_400_000, originalTransactionId: "o1")
        _ = try await store.ingest(
            ReceivedMessage(
                notificationUUID: "n1", source: .appleV2, body: Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8), receivedAt: now,
                bundleId: APIHarness.bundleId),
            facts: [(.notification(notification), signedPayload), (.transaction(fact), signedTransaction)], claim: Claim(appUserId: "sam"),
            projector: ledger, now: now)
        await store.close()
    }
}
