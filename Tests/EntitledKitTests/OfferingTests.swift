import EntitledConfig
import EntitledKit
import Foundation
import Testing

/// The paywall through the portable core: the server's offering, the store's products matched to
/// its packages, a package bought; and the answer's fields the app reads.
@Suite struct OfferingTests {
    static let seed = PaywallSeed(
        offerings: [
            PaywallSeed.Offering(
                id: "default",
                json: Array(
                    #"""
                    {"description": "Pro", "metadata": {"title": "Go Pro", "rank": 2},
                     "packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly"}},
                                  {"id": "$annual", "products": {"appStore": "pro.yearly"}},
                                  {"id": "$lifetime", "products": {"appStore": "lifetime", "playStore": "lifetime"}}]}
                    """#.utf8))
        ], currentOffering: "default")

    static let month = StoreProduct.Period(value: 1, unit: .month)
    static let monthly = StoreProduct(
        id: "pro.monthly", displayName: "Pro monthly", price: Decimal(string: "9.99")!, displayPrice: "$9.99", subscriptionPeriod: month,
        introductoryOffer: StoreProduct.IntroductoryOffer(
            paymentMode: "freeTrial", price: 0, displayPrice: "$0.00", period: StoreProduct.Period(value: 1, unit: .week), periodCount: 1))
    static let yearly = StoreProduct(
        id: "pro.yearly", displayName: "Pro yearly", price: Decimal(string: "99.99")!, displayPrice: "$99.99",
        subscriptionPeriod: StoreProduct.Period(value: 1, unit: .year))

    @Test func theOfferingComesWithTheStoresProductsAndBuysAPackage() async throws {
        try await KitWorld.run(paywall: Self.seed) { world in
            let store = world.store(for: "ana")
            // The store does not sell `lifetime` (not approved yet, say).
            store.state.withLock {
                $0.products = [Self.yearly, Self.monthly]
                $0.storefront = "USA"
            }
            let purchases = Purchases(client: world.client("ana"), store: store, bundleId: "com.example.app")
            let shown = try await purchases.offerings(OfferingContext(platform: "ios", appVersion: "2.0"))
            #expect(shown.offering.offeringId == "default")
            #expect(shown.offering.description == "Pro")
            #expect(shown.offering.metadata["title"]?.string == "Go Pro")
            #expect(shown.offering.metadata["rank"] == .number(2))
            #expect(shown.offering.states == ["new"])
            #expect(shown.offering.experiment == nil)
            #expect(shown.packages.map(\.id) == ["$monthly", "$annual"])
            #expect(shown.packages.map(\.product) == [Self.monthly, Self.yearly])
            #expect(shown.unavailable == ["$lifetime"])
            #expect(store.state.withLock { $0.productQueries } == [["pro.monthly", "pro.yearly", "lifetime"]])
            // A new customer may take the monthly's free trial; the yearly has no introductory offer.
            #expect(shown.packages[0].introductoryOffer?.paymentMode == "freeTrial")
            #expect(shown.packages[0].offers == [.introductory])
            #expect(shown.packages[1].introductoryOffer == nil)
            #expect(shown.packages[1].offers.isEmpty)

            guard case .purchased(let answer) = try await purchases.purchase(package: shown.packages[0]) else {
                Issue.record("not purchased")
                return
            }
            #expect(store.state.withLock { $0.purchases.map(\.productID) } == ["pro.monthly"])
            #expect(answer.entitlements["pro"]?.store == "appStore")
            #expect(answer.subscriptions.first?.current?.store == "appStore")

            // Subscribed: the group's introductory offer is used up.
            let after = try await purchases.offerings()
            #expect(after.offering.states == ["active", "trialUsed"])
            #expect(after.packages.allSatisfy { $0.introductoryOffer == nil && $0.offers.isEmpty })
        }
    }

    @Test func noOfferingIsTheServersProblem() async throws {
        try await KitWorld.run { world in
            await #expect(throws: EntitledError.self) { _ = try await world.client("ana").offering() }
        }
    }

    /// What a newer server may add is read; what an older one leaves out is nil.
    @Test func anOfferingAndAGrantDecodeWithAndWithoutTheirNewerFields() throws {
        let offering = #"""
            {"appUserId": "a", "version": 3, "offeringId": "o", "offeringVersion": 2, "ruleId": null,
             "experiment": {"id": "price-test", "variant": 1}, "description": null, "metadata": {"list": [1, "x", null, true]},
             "packages": [{"id": "$monthly", "products": {"appStore": "p"},
                           "eligibility": {"introductoryOffer": false, "winBackOfferIds": ["back"]}}],
             "states": ["inactive"], "future": 1}
            """#
        let decoded = try JSONDecoder().decode(Offering.self, from: Data(offering.utf8))
        #expect(decoded.experiment?.id == "price-test")
        #expect(decoded.experiment?.variant == 1)
        #expect(decoded.metadata["list"] == .array([.number(1), .string("x"), .null, .bool(true)]))
        let resolved = ResolvedOffering(offering: decoded, products: [StoreProduct(id: "p", displayName: "P", price: 1, displayPrice: "$1")])
        #expect(resolved.packages.first?.offers == [.winBack("back")])
        let grant = #"""
            {"active": true, "status": "active", "productId": "p", "productType": "autoRenewable", "transactionId": "t",
             "originalTransactionId": "o", "purchaseDate": "2027-01-01T00:00:00.000Z"%@}
            """#
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        let play = try decoder.decode(CustomerAnswer.Grant.self, from: Data(grant.replacingOccurrences(of: "%@", with: #", "store": "playStore""#).utf8))
        #expect(play.store == "playStore")
        let older = try decoder.decode(CustomerAnswer.Grant.self, from: Data(grant.replacingOccurrences(of: "%@", with: "").utf8))
        #expect(older.store == nil)
    }
}
