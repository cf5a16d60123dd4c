import AppStore
import AppStoreSimulator
import Foundation
import Testing

// The simulator's clock and catalogs, and what a purchase signs.

@Suite struct ClockAndCatalogTests {
    @Test func durationsParseAndAddOnTheCalendar() throws {
        #expect(ISODuration("P1M")!.months == 1)
        #expect(ISODuration("P1W")!.days == 7)
        #expect(ISODuration("P1DT12H")!.hours == 12)
        #expect(ISODuration("1M") == nil)
        #expect(ISODuration("P") == nil)
        #expect(ISODuration("PT") == nil)
        // 2026-01-31 + P1M = 2026-02-28 (UTC).
        let jan31: Int64 = 1_769_817_600_000
        #expect(ISODuration("P1M")!.added(to: jan31) == jan31 + 28 * Milliseconds.day)
        #expect(ISODuration("PT1H")!.added(to: 5) == Milliseconds.hour + 5)
    }

    @Test func virtualClockNeverGoesBack() {
        let clock = VirtualClock(milliseconds: 1000)
        clock.advance(milliseconds: 500)
        clock.set(milliseconds: 10)
        clock.advance(milliseconds: -100)
        #expect(clock.nowMilliseconds() == 1500)
    }

    @Test func loadsXcodeStoreKitFiles() throws {
        let catalog = try Catalog.load(storeKit: try Data(contentsOf: fixtureURL("Sample.storekit")), bundleId: bundleId)
        #expect(catalog.products.count == 5)
        let monthly = try #require(catalog.product("com.example.pro.monthly"))
        #expect(monthly.kind == .autoRenewable)
        #expect(monthly.group == "21450001")
        #expect(monthly.level == 2)
        #expect(monthly.period == ISODuration("P1M"))
        #expect(monthly.price == 9990)
        #expect(monthly.familyShareable)
        #expect(monthly.introductoryOffer?.discountType == .freeTrial)
        #expect(monthly.introductoryOffer?.period == ISODuration("P1W"))
        #expect(monthly.promotionalOffers.first?.id == "COMEBACK")
        #expect(monthly.promotionalOffers.first?.periods == 3)
        #expect(monthly.offerCodes.first?.discountType == .payUpFront)
        #expect(monthly.winBackOffers.first?.id == "WINBACK1")
        #expect(catalog.product("com.example.pro.yearly")?.level == 1)
        #expect(catalog.product("com.example.coins")?.kind == .consumable)
        #expect(catalog.product("com.example.noads")?.kind == .nonConsumable)
        #expect(catalog.product("com.example.season")?.kind == .nonRenewing)
    }

    @Test func loadsItsOwnCatalogJSON() throws {
        let json = """
            {"bundleId": "com.x", "appAppleId": 7, "gracePeriodDays": 16, "products": [
              {"id": "a", "kind": "autoRenewable", "group": "g", "level": 1, "period": "P1M", "price": 2990,
               "introductoryOffer": {"discountType": "FREE_TRIAL", "period": "P3D", "periods": 1, "price": 0}},
              {"id": "b", "kind": "consumable", "price": 990}]}
            """
        let catalog = try Catalog.load(json: Data(json.utf8))
        #expect(catalog.gracePeriodDays == 16)
        #expect(catalog.product("a")?.introductoryOffer?.period == ISODuration("P3D"))
        #expect(catalog.product("b")?.kind == .consumable)
    }

    @Test func caPersistsAcrossRestarts() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sim-ca-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try SimulatorCA.loadOrCreate(in: folder)
        let second = try SimulatorCA.loadOrCreate(in: folder)
        #expect(first.rootDER == second.rootDER)
        #expect(first.chain == second.chain)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("ca/root.der").path))
        // The reloaded key signs payloads the first root verifies.
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [first.rootDER], bundleId: bundleId, environment: .sandbox),
            clock: VirtualClock(milliseconds: start))
        let jws = try second.signer.sign(
            JWSTransactionDecodedPayload(transactionId: "1", bundleId: bundleId, signedDate: start, environment: .sandbox))
        #expect(try verifier.verifySynchronously(jws, as: JWSTransactionDecodedPayload.self).value.transactionId == "1")
    }
}

@Suite struct PurchaseTests {
    @Test func initialBuyIsSignedWithEveryKeyField() async throws {
        let h = try await Harness()
        let token = "5a1b3c4d-0000-4000-8000-000000000001"
        let out = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.appAccountToken = token
        }
        #expect(out.map(\.kind) == ["SUBSCRIBED/INITIAL_BUY"])
        let n = out[0]
        #expect(n.status == .active)
        #expect(n.payload.version == "2.0")
        #expect(n.payload.signedDate == start)
        #expect(n.payload.data?.environment == .sandbox)
        #expect(n.payload.data?.appAppleId == nil)
        #expect(n.payload.data?.bundleId == bundleId)
        let tx = try #require(n.transaction)
        #expect(tx.originalTransactionId == tx.transactionId)
        #expect(tx.webOrderLineItemId != nil)
        #expect(tx.productId == "pro.monthly")
        #expect(tx.subscriptionGroupIdentifier == "pro")
        #expect(tx.purchaseDate == start)
        #expect(tx.originalPurchaseDate == start)
        #expect(tx.expiresDate == ISODuration("P1M")!.added(to: start))
        #expect(tx.type == .autoRenewableSubscription)
        #expect(tx.inAppOwnershipType == .purchased)
        #expect(tx.appAccountToken == token)
        #expect(tx.transactionReason == .purchase)
        #expect(tx.storefront == "USA")
        #expect(tx.price == 9990)
        #expect(tx.currency == "USD")
        #expect(tx.offerType == nil)
        let renewal = try #require(n.renewal)
        #expect(renewal.autoRenewStatus == .on)
        #expect(renewal.autoRenewProductId == "pro.monthly")
        #expect(renewal.renewalDate == tx.expiresDate)
        #expect(renewal.renewalPrice == 9990)
        #expect(renewal.originalTransactionId == tx.originalTransactionId)
        #expect(renewal.isInBillingRetryPeriod == false)
        #expect(renewal.expirationIntent == nil)
    }

    @Test func productionCarriesAppAppleId() async throws {
        let h = try await Harness(environment: .production)
        let out = try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
        }
        #expect(out[0].payload.data?.environment == .production)
        #expect(out[0].payload.data?.appAppleId == appAppleId)
        #expect(out[0].transaction?.storefront == "GBR")
    }

    @Test func introductoryFreeTrialThenFullPrice() async throws {
        let h = try await Harness()
        let out = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.offer = "intro"
        }
        let tx = try #require(out[0].transaction)
        #expect(tx.offerType == .introductoryOffer)
        #expect(tx.offerDiscountType == .freeTrial)
        #expect(tx.offerPeriod == "P1W")
        #expect(tx.price == 0)
        #expect(tx.expiresDate == start + 7 * Milliseconds.day)
        let renewals = try await h.advance("P8D")
        #expect(renewals.map(\.kind) == ["DID_RENEW"])
        #expect(renewals[0].transaction?.offerType == nil)
        #expect(renewals[0].transaction?.price == 9990)
        #expect(renewals[0].transaction?.purchaseDate == start + 7 * Milliseconds.day)
        // A second intro in the same group is refused.
        await #expect(throws: SimulatorError.self) {
            try await h.perform("purchase") {
                $0.customer = "alice"
                $0.product = "pro.monthly"
                $0.offer = "intro"
            }
        }
    }

    @Test func offerCodePayUpFrontAndPromotionalPayAsYouGo() async throws {
        let h = try await Harness()
        let code = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.offer = "offerCode"
            $0.offerId = "CODE3M"
        }
        #expect(code[0].transaction?.offerType == .offerCode)
        #expect(code[0].transaction?.offerIdentifier == "CODE3M")
        #expect(code[0].transaction?.offerDiscountType == .payUpFront)
        #expect(code[0].transaction?.expiresDate == ISODuration("P3M")!.added(to: start))
        // Promotional offer on the active subscription: OFFER_REDEEMED, two discounted periods.
        let promo = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.offer = "promotional"
            $0.offerId = "promo50"
        }
        #expect(promo.map(\.kind) == ["OFFER_REDEEMED"])
        #expect(promo[0].transaction?.offerType == .promotionalOffer)
        #expect(promo[0].transaction?.offerDiscountType == .payAsYouGo)
        #expect(promo[0].renewal?.offerType == .promotionalOffer)
        #expect(promo[0].renewal?.renewalPrice == 4990)
        let renewals = try await h.advance("P2M")
        #expect(renewals.count == 2)
        #expect(renewals[0].transaction?.offerType == .promotionalOffer)
        #expect(renewals[0].transaction?.price == 4990)
        #expect(renewals[1].transaction?.offerType == nil)
        #expect(renewals[1].transaction?.price == 9990)
    }

    @Test func oneTimePurchasesSendOneTimeCharge() async throws {
        let h = try await Harness()
        let coins = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
            $0.quantity = 3
        }
        #expect(coins.map(\.kind) == ["ONE_TIME_CHARGE"])
        #expect(coins[0].status == nil)
        #expect(coins[0].renewal == nil)
        #expect(coins[0].transaction?.type == .consumable)
        #expect(coins[0].transaction?.quantity == 3)
        #expect(coins[0].transaction?.price == 2970)
        let season = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "season"
        }
        #expect(season[0].transaction?.type == .nonRenewingSubscription)
        #expect(season[0].transaction?.expiresDate == ISODuration("P3M")!.added(to: start))
        let refund = try await h.perform("refund") {
            $0.customer = "alice"
            $0.product = "coins"
        }
        #expect(refund.map(\.kind) == ["REFUND"])
        #expect(refund[0].transaction?.revocationDate == start)
        #expect(refund[0].transaction?.revocationType == .refundFull)
    }

    @Test func failingPaymentMethodRefusesAPurchase() async throws {
        let h = try await Harness()
        try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "failing"
        }
        await #expect(throws: SimulatorError.self) {
            try await h.perform("purchase") {
                $0.customer = "alice"
                $0.product = "pro.monthly"
            }
        }
    }
}
