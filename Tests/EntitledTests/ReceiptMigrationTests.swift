import AppStore
import AppStoreSimulator
import AppStoreTesting
import EntitledCrypto
@testable import EntitledTestSupport
import Foundation
import Testing

/// A receipt posted for an app with `serverAPI`: the receipt only names the purchase; what is
/// applied is Apple's signed history for it (the simulator's fake Server API), as Apple recommends
/// for migrating StoreKit 1 customers.
@Suite(.serialized) struct ReceiptMigrationTests {
    static let ca = try! TestCertificateAuthority(options: .init(name: "Receipts"))

    @Test func aReceiptWithServerAPIAppliesApplesHistoryInstead() async throws {
        try await ReconcileScenarioTests.withWorld(receiptRoot: Self.ca.rootDER) { world in
            // Apple's notifications never arrive: the server learns of the purchase only by the receipt.
            await world.transport.set(down: true)
            try await world.act("customer") { $0.customer = "dave" }
            var request = ActionRequest("purchase")
            request.customer = "dave"
            request.product = "pro.monthly"
            let sent = try await world.simulator.perform(request)
            let signed = try #require(sent.compactMap { $0.payload.data?.signedTransactionInfo }.first as String?)
            let part = try #require(signed.split(separator: ".").dropFirst().first)
            let transaction = try AppStoreJSON.decode(
                JWSTransactionDecodedPayload.self, from: Data(try #require(Base64.urlDecode(part))))
            let transactionId = try #require(transaction.transactionId)
            // The receipt claims another product: only Apple's history may decide what is applied.
            let receipt = TestReceipt(
                bundleId: Catalog.demo.bundleId, creationDate: APIHarness.start - 60_000,
                purchases: [.init(productId: "pro.yearly", transactionId: transactionId, purchaseDate: APIHarness.start - 60_000)])
            let reply = try await Loopback.send(
                port: world.port, "POST", "/v1/customers/dave/receipts",
                headers: ["Authorization": APIHarness.writer, "Content-Type": "application/json"],
                body: Array(#"{"receiptData":"\#(try receipt.signed(by: Self.ca))"}"#.utf8))
            #expect(reply.status == 200)
            let pro = try #require(reply.entitlement("pro"))
            #expect(pro["productId"] as? String == "pro.monthly")
            #expect(pro["originalTransactionId"] as? String == transaction.originalTransactionId)
            #expect(pro["status"] as? String == "active")
        }
    }
}
