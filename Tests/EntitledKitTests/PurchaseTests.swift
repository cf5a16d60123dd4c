import AppStoreSimulator
import EntitledKit
import Foundation
import Testing

/// The purchase rules of the portable core against a real server: finish only after the 200,
/// an unreachable server leaves the transaction for the next launch, a refusal is not retried.
@Suite struct PurchaseTests {
    @Test func aPurchaseIsFinishedOnlyAfterTheServersOK() async throws {
        try await KitWorld.run { world in
            let client = world.client("alice")
            let store = world.store(for: "alice")
            let purchases = Purchases(client: client, store: store, bundleId: "com.example.app")
            let before = try await client.customer()
            #expect(before.state == .new)
            guard case .purchased(let answer) = try await purchases.purchase(productID: "pro.monthly") else {
                Issue.record("not purchased")
                return
            }
            #expect(answer.grants("pro"))
            #expect(answer.state == .active)
            // The purchase carried the customer's appAccountToken from the answer.
            #expect(store.state.withLock { $0.purchases.map(\.token) } == [before.appAccountToken])
            let id = try #require(store.state.withLock { $0.finishes.keys.first })
            #expect(store.finishCount(id) == 1)
            #expect(store.unfinishedIDs.isEmpty)
            // The order: purchased, posted and answered 200, and only then finished.
            let events = world.log.all.filter { $0.hasPrefix("purchased") || $0.hasPrefix("POST") || $0.hasPrefix("finish") }
            #expect(events == ["purchased \(id)", "POST /v1/customers/alice/transactions → 200", "finish \(id)"])
            #expect(await client.isEntitled("pro"))
        }
    }

    @Test func aServerThatIsDownLeavesTheTransactionForTheNextLaunch() async throws {
        try await KitWorld.run { world in
            let client = world.client("bob")
            let store = world.store(for: "bob")
            _ = try await client.customer()
            world.transport.offline = true
            await #expect(throws: EntitledError.self) {
                _ = try await Purchases(client: client, store: store, bundleId: "com.example.app").purchase(productID: "pro.monthly")
            }
            let id = try #require(store.unfinishedIDs.first)
            #expect(store.finishCount(id) == 0)
            // Retried with backoff before giving up: 3 attempts, 2 waits, each twice the last.
            #expect(world.sleeper.all == [0.5, 1])
            #expect(world.log.all.filter { $0.hasPrefix("POST") }.count == 3)

            // The next launch, with the server back: delivered, finished once.
            world.transport.offline = false
            let relaunched = Purchases(client: world.client("bob"), store: store, bundleId: "com.example.app")
            let outcome = try await relaunched.restore()
            #expect(outcome.kind == .active)
            #expect(outcome.failed == 0)
            #expect(store.finishCount(id) == 1)
            #expect(store.unfinishedIDs.isEmpty)
            // Once finished, a further launch posts it no more.
            _ = try await relaunched.restore()
            #expect(store.finishCount(id) == 1)
        }
    }

    @Test func aRefusedTransactionIsNeitherRetriedNorFinished() async throws {
        try await KitWorld.run { world in
            let client = world.client("carol")
            let store = world.store(for: "carol")
            let token = try await client.customer().appAccountToken
            let (id, jws) = try await world.buy("carol", "pro.monthly", token: token)
            var parts = jws.split(separator: ".").map(String.init)
            var signature = Array(parts[2])
            signature[20] = signature[20] == "A" ? "B" : "A"
            parts[2] = String(signature)
            let forged = store.transaction(id: id, product: "pro.monthly", jws: parts.joined(separator: "."))
            let requests = world.transport.requests
            let purchases = Purchases(client: client, store: store, bundleId: "com.example.app")
            do {
                _ = try await purchases.deliver(forged)
                Issue.record("a forged transaction was accepted")
            } catch let error as EntitledError {
                #expect(error.code == "INVALID_SIGNATURE")
                guard case .server(let status, _, _) = error else { throw error }
                #expect(status == 400)
            }
            #expect(world.transport.requests == requests + 1)
            #expect(world.sleeper.all.isEmpty)
            #expect(store.finishCount(id) == 0)
        }
    }

    @Test func fiveHundredsAreRetriedWithBackoff() async throws {
        try await KitWorld.run { world in
            let client = world.client("dave")
            world.transport.failNext(2)
            let answer = try await client.customer()
            #expect(answer.state == .new)
            #expect(world.transport.requests == 3)
            #expect(world.sleeper.all == [0.5, 1])
        }
    }

    @Test func updatesAreDeliveredAndFinished() async throws {
        try await KitWorld.run { world in
            let client = world.client("erin")
            let store = world.store(for: "erin")
            let token = try await client.customer().appAccountToken
            let purchases = Purchases(client: client, store: store, bundleId: "com.example.app")
            await purchases.startListening()
            // A purchase approved later (Ask to Buy) arrives through Transaction.updates.
            let (id, jws) = try await world.buy("erin", "pro.monthly", token: token)
            store.continuation.yield(store.transaction(id: id, product: "pro.monthly", jws: jws))
            #expect(await eventually { store.finishCount(id) == 1 })
            #expect(await client.isEntitled("pro"))
            await purchases.stopListening()
        }
    }

    @Test func theStorefrontCatalogDecidesWhetherAPurchaseGoesOn() async throws {
        try await KitWorld.run { world in
            let client = world.client("frank")
            let store = world.store(for: "frank")
            let purchases = Purchases(client: client, store: store, bundleId: "com.example.app")
            #expect(await purchases.shouldContinue(productID: "pro.yearly", storefront: "USA"))
            #expect(await !purchases.shouldContinue(productID: "pro.yearly", storefront: "fra"))
            #expect(await purchases.shouldContinue(productID: "pro.monthly", storefront: "FRA"))
            store.state.withLock { $0.storefront = "FRA" }
            guard case .notSoldInStorefront = try await purchases.purchase(productID: "pro.yearly") else {
                Issue.record("purchase went on")
                return
            }
            #expect(store.state.withLock { $0.purchases.isEmpty })
            // Offline, the catalog is unknown: the purchase is not blocked (the App Store refuses what it does not sell).
            world.transport.offline = true
            let fresh = Purchases(client: client, store: store, bundleId: "com.example.app")
            #expect(await fresh.shouldContinue(productID: "pro.yearly", storefront: "DEU"))
        }
    }

    /// The three kinds of customer a launch-time restore tells apart.
    @Test(arguments: [CustomerKind.new, .active, .inactive])
    func restoreAtLaunchClassifies(kind: CustomerKind) async throws {
        try await KitWorld.run { world in
            let client = world.client("gina")
            let store = world.store(for: "gina")
            store.state.withLock { $0.appTransaction = try? world.appTransaction() }
            let token = try await client.customer().appAccountToken
            switch kind {
            case .new:
                break
            case .active:
                let (id, jws) = try await world.buy("gina", "pro.monthly", token: token)
                store.state.withLock { $0.current = [store.transaction(id: id, product: "pro.monthly", jws: jws)] }
            case .inactive:
                // Subscribed on an earlier launch, then it lapsed: StoreKit lists no current entitlement.
                let (_, jws) = try await world.buy("gina", "pro.monthly", token: token)
                _ = try await client.post(signedTransaction: jws)
                var off = ActionRequest("autoRenew")
                off.customer = "gina"
                off.enabled = false
                try? await world.simulator.perform(off)
                try await world.advance(seconds: 40 * KitWorld.day)
                store.state.withLock { $0.appTransaction = try? world.appTransaction() }
            }
            let outcome = try await Purchases(client: world.client("gina"), store: store, bundleId: "com.example.app").launch()
            #expect(outcome.kind == kind)
            #expect(outcome.failed == 0)
            #expect(outcome.answer.grants("pro") == (kind == .active))
        }
    }
}
