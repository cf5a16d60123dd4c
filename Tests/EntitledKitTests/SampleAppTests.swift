import AppStoreSimulator
import EntitledConfig
import EntitledCrypto
import EntitledKit
import EntitledSampleCore
import Foundation
import Testing

/// The sample app's logic (Examples/EntitledSample, EntitledSampleCore) against a server run with
/// the sample's own `entitled-dev.json` and a simulator selling its `EntitledSample.storekit`, as
/// `entitled dev --config … --storekit …` runs them: the paywall, a purchase opening the gate, a
/// server-signed offer, and restore.
@Suite struct SampleAppTests {
    static let sample: URL = {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return root.appendingPathComponent("Examples/EntitledSample")
    }()
    static let settings = SampleSettings.dev
    static let monthly = "com.example.EntitledSample.pro.monthly"
    static let yearly = "com.example.EntitledSample.pro.yearly"
    static let lifetime = "com.example.EntitledSample.lifetime"
    static let signingKeyId = "SAMPLEKEY1"

    static func configuration() throws -> Configuration {
        try ConfigurationLoader(environment: [:]).load(
            path: sample.appendingPathComponent("entitled-dev.json").path, database: "sqlite::memory:")
    }

    static func catalog() throws -> AppStoreSimulator.Catalog {
        try AppStoreSimulator.Catalog.load(
            storeKit: Data(contentsOf: sample.appendingPathComponent("EntitledSample.storekit")), bundleId: settings.bundleId)
    }

    /// Names and prices as StoreKit would give them, from the `.storekit` file's catalog.
    struct StoreKitFileProducts: ProductSource {
        let catalog: AppStoreSimulator.Catalog
        func products(for ids: [String]) async throws -> [ProductInfo] {
            catalog.products.filter { ids.contains($0.id) }.map {
                ProductInfo(
                    id: $0.id, displayName: $0.id, displayPrice: "\($0.price / 1000)",
                    introductoryOffer: $0.introductoryOffer == nil ? nil : "1 week free")
            }
        }
    }

    /// The server (with a signing key, which the sample's file leaves to you) and a new install of
    /// the sample whose store buys as the simulator's `device` account.
    static func run(_ body: @escaping @MainActor (KitWorld, SampleModel, FakeStore) async throws -> Void) async throws {
        var configuration = try configuration()
        configuration.apps[0].signingKey = SigningKeySettings(
            keyId: signingKeyId, issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: try P256PrivateKey().pkcs8PEM())
        let catalog = try catalog()
        try await KitWorld.run(configured: configuration, catalog: catalog) { world in
            let store = world.store(for: "device")
            let model = await install(world, store: store, catalog: catalog)
            try await body(world, model, store)
        }
    }

    @MainActor static func install(_ world: KitWorld, store: FakeStore, catalog: AppStoreSimulator.Catalog) -> SampleModel {
        let entitled = Entitled(
            baseURL: world.baseURL, appKey: settings.appKey, bundleId: settings.bundleId, store: store,
            identityStore: InMemoryIdentityStore(), configuration: world.configuration(disk: false, environment: nil))
        return SampleModel(entitled: entitled, products: StoreKitFileProducts(catalog: catalog), settings: settings)
    }

    @Test func theSampleSellsWhatItsDevConfigurationGrants() throws {
        let app = try #require(try Self.configuration().apps.first)
        let catalog = try Self.catalog()
        #expect(app.bundleId == Self.settings.bundleId)
        #expect(app.appKeys.map(\.key) == [Self.settings.appKey])
        // The paywall's products, the configuration's and the .storekit file's are the same, in the same groups.
        #expect(Set(app.products.map(\.productId)) == Set(Self.settings.productIDs))
        #expect(Set(catalog.products.map(\.id)) == Set(Self.settings.productIDs))
        for product in app.products {
            let sold = try #require(catalog.product(product.productId))
            #expect(sold.group == product.subscriptionGroup, "\(product.productId)")
            #expect(product.entitlements == [Self.settings.entitlement])
            // Every offer the server may sign exists in the .storekit file, under the same id.
            #expect(Set(product.promotionalOffers).isSubset(of: sold.promotionalOffers.compactMap(\.id)), "\(product.productId)")
            #expect(Set(product.winBackOffers.map(\.offerId)).isSubset(of: sold.winBackOffers.compactMap(\.id)), "\(product.productId)")
        }
        #expect(app.products.contains { !$0.promotionalOffers.isEmpty })
    }

    @Test func aNewCustomerBuysOnThePaywallAndTheGateOpens() async throws {
        try await Self.run { world, model, store in
            await model.start()
            let first = try #require(model.answer)
            #expect(first.appUserId.hasPrefix("$anon:"))
            #expect(!model.isUnlocked)
            #expect(model.paywall.map(\.id) == Self.settings.productIDs)
            // Never subscribed: both plans' introductory offer, no promotional one yet.
            #expect(model.paywall.map(\.introductoryOfferEligible) == [true, true, false])
            #expect(model.paywall.map(\.offers) == [[], [], []])

            await model.purchase(Self.monthly)
            #expect(model.isUnlocked)
            #expect(model.message == "Unlocked pro.")
            #expect(model.answer?.appUserId == first.appUserId)
            #expect(model.answer?.entitlements["pro"]?.productId == Self.monthly)
            let bought = try #require(store.state.withLock { $0.purchases.first })
            #expect(bought.productID == Self.monthly && bought.token == first.appAccountToken)
            let id = try #require(await world.simulator.store.transactionOrder.last)
            #expect(store.finishCount(id) == 1)
            // A subscriber: the introductory offers are used up, the promotional one is offered.
            #expect(model.paywall.map(\.introductoryOfferEligible) == [false, false, false])
            #expect(model.paywall.first?.offers == [.promotional("pro.monthly.half")])
        }
    }

    @Test func aLapsedSubscriberRedeemsAnOfferWithTheServersSignature() async throws {
        try await Self.run { world, model, store in
            await model.start()
            await model.purchase(Self.monthly)
            #expect(model.isUnlocked)
            // Still subscribed: the win-back offer is refused by the server, before any sheet.
            await model.purchase(Self.monthly, offer: .winBack("pro.monthly.comeback"))
            #expect(model.message?.contains("OFFER_NOT_ELIGIBLE") == true)
            #expect(store.state.withLock { $0.purchases.count } == 1)

            // Auto-renew off, and 40 days later (the app opened every 10 hours, which keeps its
            // day-long anonymous token renewed) the subscription has lapsed: the paywall is back,
            // with the promotional offer and the win-back offer of the configuration.
            var autoRenew = ActionRequest("autoRenew")
            autoRenew.customer = "device"
            autoRenew.product = Self.monthly
            autoRenew.enabled = false
            try await world.simulator.perform(autoRenew)
            let customer = model.answer?.appUserId
            for _ in 0..<96 {
                try await world.advance(seconds: KitWorld.day * 10 / 24)
                await model.refresh()
            }
            #expect(model.answer?.appUserId == customer)
            #expect(!model.isUnlocked)
            #expect(model.paywall.first?.offers == [.promotional("pro.monthly.half"), .winBack("pro.monthly.comeback")])

            await model.purchase(Self.monthly, offer: .promotional("pro.monthly.half"))
            #expect(model.message == "Unlocked pro.")
            #expect(model.isUnlocked)
            let passed = try #require(store.state.withLock { $0.offers.last } ?? nil)
            #expect(passed.offer == .promotional("pro.monthly.half"))
            #expect(passed.signed.keyId == Self.signingKeyId)
            #expect(passed.signed.signature != nil)
            #expect(!model.busy)
        }
    }

    @Test func restoreUnlocksWhatTheAppleAccountAlreadyOwns() async throws {
        try await Self.run { world, model, store in
            await model.start()
            await model.restore()
            #expect(model.message == "Nothing to restore.")
            #expect(!model.isUnlocked)
            let customer = try #require(model.answer?.appUserId)

            // Bought on another device (another install's customer): StoreKit lists it among the
            // Apple account's current entitlements, and restore posts it for this customer.
            let (id, jws) = try await world.buy("device", Self.lifetime, token: UUID())
            store.state.withLock { $0.current = [store.transaction(id: id, product: Self.lifetime, jws: jws)] }
            await model.restore()
            #expect(model.message == "Restored: pro is active.")
            #expect(model.isUnlocked)
            #expect(model.answer?.appUserId == customer)
            #expect(model.answer?.entitlements["pro"]?.productId == Self.lifetime)
        }
    }
}
