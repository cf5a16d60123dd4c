@testable import EntitledTestSupport
import Foundation
import GooglePlay
import GooglePlaySimulator
import Testing

/// A Play purchase whose `obfuscatedExternalAccountId` is a customer's `appAccountToken` (the app
/// passed it to `setObfuscatedAccountId`) belongs to that customer from its first push, with no
/// post from the app, as an App Store transaction carrying the token does.
@Suite(.serialized) struct PlayPushLinkingTests {
    @Test(arguments: StoredBackend.all)
    func aPushCarryingTheCustomersTokenLinksThePurchaseToThem(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let server = try await world.startServer(backend)
        let customer = try await world.send(server, "GET", "/v1/customers/alice")
        let account = try #require(customer.json["appAccountToken"] as? String)

        let subscription = try world.google.buySubscription(
            packageName: PlayWorld.packageName, productId: "premium", obfuscatedAccountId: account)
        let product = try world.google.buyProduct(
            packageName: PlayWorld.packageName, productId: "lifetime", obfuscatedAccountId: account.uppercased())
        // Someone else's token links nothing to Alice.
        try world.google.buySubscription(
            packageName: PlayWorld.packageName, productId: "premium.plus", obfuscatedAccountId: UUID().uuidString.lowercased())
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await world.push(server, notification, messageId: "link-\(index)") == 200)
        }

        let answer = try await world.send(server, "GET", "/v1/customers/alice")
        let pro = try #require(GooglePlayAPITests.entitlement(answer, "pro"))
        #expect(pro["store"] as? String == "playStore")
        #expect(pro["transactionId"] as? String == subscription)
        #expect(pro["active"] as? Bool == true)
        // The token matches whatever its case, as an App Store appAccountToken does.
        #expect(GooglePlayAPITests.entitlement(answer, "extras")?["transactionId"] as? String == product)
        #expect(GooglePlayAPITests.entitlement(answer, "plus") == nil)
    }
}
