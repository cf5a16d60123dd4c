import AppStore
import AppStoreSimulator
import Foundation
import Testing

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

@Suite struct RenewalTests {
    func subscribed(_ h: Harness, product: String = "pro.monthly") async throws -> JWSTransactionDecodedPayload {
        let out = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = product
        }
        return try #require(out[0].transaction)
    }

    @Test func renewsEveryMonthOnTheVirtualClock() async throws {
        let h = try await Harness()
        let first = try await subscribed(h)
        let out = try await h.advance("P3M")
        #expect(out.map(\.kind) == ["DID_RENEW", "DID_RENEW", "DID_RENEW"])
        var previousExpiry = first.expiresDate!
        var ids: Set<String> = [first.transactionId!]
        var lines: Set<String> = [first.webOrderLineItemId!]
        for n in out {
            let tx = try #require(n.transaction)
            #expect(n.status == .active)
            #expect(tx.originalTransactionId == first.originalTransactionId)
            #expect(tx.transactionReason == .renewal)
            #expect(tx.purchaseDate == previousExpiry)
            #expect(tx.expiresDate == ISODuration("P1M")!.added(to: previousExpiry))
            #expect(n.payload.signedDate == previousExpiry)
            ids.insert(tx.transactionId!)
            lines.insert(tx.webOrderLineItemId!)
            previousExpiry = tx.expiresDate!
        }
        #expect(ids.count == 4)
        #expect(lines.count == 4)
        #expect(h.simulator.now == ISODuration("P3M")!.added(to: start))
    }

    @Test func acceleratedRenewalsFollowApplesTable() async throws {
        let h = try await Harness()
        try await h.perform("renewalRate") { $0.rate = "monthlyEveryFiveMinutes" }
        let monthly = try await subscribed(h)
        #expect(monthly.expiresDate == start + 5 * Milliseconds.minute)
        let out = try await h.advance("PT15M")
        #expect(out.map(\.kind) == ["DID_RENEW", "DID_RENEW", "DID_RENEW"])
        #expect(out.last?.transaction?.expiresDate == start + 20 * Milliseconds.minute)
        #expect(RenewalRate.monthlyEveryFiveMinutes.end(of: ISODuration("P1W")!, from: 0) == 3 * Milliseconds.minute)
        #expect(RenewalRate.monthlyEveryFiveMinutes.end(of: ISODuration("P1Y")!, from: 0) == Milliseconds.hour)
        #expect(RenewalRate.monthlyEveryFiveMinutes.end(of: ISODuration("P3M")!, from: 0) == 15 * Milliseconds.minute)
        #expect(RenewalRate.monthlyEveryHour.end(of: ISODuration("P6M")!, from: 0) == 6 * Milliseconds.hour)
        #expect(RenewalRate.monthlyEveryThirtyMinutes.end(of: ISODuration("P1W")!, from: 0) == 10 * Milliseconds.minute)
        await #expect(throws: SimulatorError.self) { try await h.perform("renewalRate") { $0.rate = "warp" } }
    }

    @Test func autoRenewOffThenVoluntaryExpiryThenResubscribeAndWinBack() async throws {
        let h = try await Harness()
        let first = try await subscribed(h)
        let off = try await h.perform("autoRenew") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.enabled = false
        }
        #expect(off.map(\.kind) == ["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED"])
        #expect(off[0].renewal?.autoRenewStatus == .off)
        #expect(off[0].renewal?.renewalDate == nil)
        let on = try await h.perform("autoRenew") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.enabled = true
        }
        #expect(on.map(\.kind) == ["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED"])
        try await h.perform("autoRenew") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.enabled = false
        }
        let expired = try await h.advance("P40D")
        #expect(expired.map(\.kind) == ["EXPIRED/VOLUNTARY"])
        #expect(expired[0].status == .expired)
        #expect(expired[0].renewal?.expirationIntent == .customerCancelled)
        #expect(expired[0].renewal?.eligibleWinBackOfferIds == ["winback1"])
        #expect(expired[0].payload.signedDate == first.expiresDate)
        let back = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.offer = "winBack"
            $0.offerId = "winback1"
        }
        #expect(back.map(\.kind) == ["SUBSCRIBED/RESUBSCRIBE"])
        #expect(back[0].transaction?.originalTransactionId == first.originalTransactionId)
        #expect(back[0].transaction?.offerType == .winBackOffer)
        #expect(back[0].status == .active)
    }

    @Test func upgradeIsImmediateAndMarksTheOldTransaction() async throws {
        let h = try await Harness()
        let first = try await subscribed(h)
        try await h.advance("P10D")
        let out = try await h.perform("upgrade") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "pro.yearly"
        }
        #expect(out.map(\.kind) == ["DID_CHANGE_RENEWAL_PREF/UPGRADE"])
        let tx = try #require(out[0].transaction)
        #expect(tx.productId == "pro.yearly")
        #expect(tx.originalTransactionId == first.originalTransactionId)
        #expect(tx.purchaseDate == start + 10 * Milliseconds.day)
        #expect(tx.expiresDate == ISODuration("P1Y")!.added(to: start + 10 * Milliseconds.day))
        #expect(out[0].renewal?.autoRenewProductId == "pro.yearly")
        let state = await h.simulator.snapshot()
        #expect(state.transactions.first { $0.transactionId == first.transactionId }?.isUpgraded == true)
    }

    @Test func downgradeTakesEffectAtRenewalAndCanBeCancelled() async throws {
        let h = try await Harness()
        _ = try await subscribed(h)
        let out = try await h.perform("downgrade") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "basic.monthly"
        }
        #expect(out.map(\.kind) == ["DID_CHANGE_RENEWAL_PREF/DOWNGRADE"])
        #expect(out[0].renewal?.autoRenewProductId == "basic.monthly")
        #expect(out[0].renewal?.productId == "pro.monthly")
        let revert = try await h.perform("changeProduct") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "pro.monthly"
        }
        #expect(revert.map(\.kind) == ["DID_CHANGE_RENEWAL_PREF"])
        try await h.perform("downgrade") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "basic.monthly"
        }
        let renewed = try await h.advance("P1M")
        #expect(renewed.map(\.kind) == ["DID_RENEW"])
        #expect(renewed[0].transaction?.productId == "basic.monthly")
        #expect(renewed[0].transaction?.price == 4990)
    }

    @Test func offerRedeemedWithAnUpgradeOrADowngrade() async throws {
        let h = try await Harness()
        _ = try await subscribed(h, product: "basic.monthly")
        // Promotional offer on a higher level: immediate, OFFER_REDEEMED/UPGRADE.
        let up = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.offer = "promotional"
            $0.offerId = "promo50"
        }
        #expect(up.map(\.kind) == ["OFFER_REDEEMED/UPGRADE"])
        #expect(up[0].transaction?.productId == "pro.monthly")
        #expect(up[0].transaction?.offerType == .promotionalOffer)
        #expect(up[0].transaction?.price == 4990)
        let bob = try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.yearly"
        }
        // Offer code on a lower level: OFFER_REDEEMED/DOWNGRADE, product and offer from the next renewal.
        let down = try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
            $0.offer = "offerCode"
            $0.offerId = "CODE3M"
        }
        #expect(down.map(\.kind) == ["OFFER_REDEEMED/DOWNGRADE"])
        #expect(down[0].renewal?.autoRenewProductId == "pro.monthly")
        #expect(down[0].renewal?.offerType == .offerCode)
        #expect(down[0].transaction?.productId == "pro.yearly")
        let renewed = try await h.advance("P1Y")
        let bobs = renewed.filter { $0.transaction?.storefront == "GBR" }
        #expect(bobs.first?.kind == "DID_RENEW")
        #expect(bobs.first?.transaction?.productId == "pro.monthly")
        #expect(bobs.first?.transaction?.offerType == .offerCode)
        #expect(bobs.first?.transaction?.purchaseDate == bob[0].transaction?.expiresDate)
        #expect(bobs.first?.transaction?.expiresDate == ISODuration("P3M")!.added(to: bob[0].transaction!.expiresDate!))
    }

    @Test func productOffSaleExpiresAtRenewal() async throws {
        let h = try await Harness()
        _ = try await subscribed(h)
        try await h.perform("productAvailability") {
            $0.product = "pro.monthly"
            $0.enabled = false
        }
        let out = try await h.advance("P1M")
        #expect(out.map(\.kind) == ["EXPIRED/PRODUCT_NOT_FOR_SALE"])
        #expect(out[0].renewal?.expirationIntent == .productNotAvailable)
        await #expect(throws: SimulatorError.self) {
            try await h.perform("purchase") {
                $0.customer = "bob"
                $0.product = "pro.monthly"
            }
        }
    }

    @Test func sameLevelSamePeriodCrossgradeIsImmediate() async throws {
        let h = try await Harness()
        _ = try await subscribed(h)
        let out = try await h.perform("crossgrade") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "pro.monthly.alt"
        }
        #expect(out[0].transaction?.productId == "pro.monthly.alt")
    }

    @Test func billingFailureWithoutGraceThenRecovery() async throws {
        let h = try await Harness()
        let first = try await subscribed(h)
        try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "failing"
        }
        let failed = try await h.advance("P1M")
        #expect(failed.map(\.kind) == ["DID_FAIL_TO_RENEW"])
        #expect(failed[0].status == .billingRetry)
        #expect(failed[0].renewal?.isInBillingRetryPeriod == true)
        #expect(failed[0].renewal?.expirationIntent == .billingError)
        #expect(failed[0].renewal?.gracePeriodExpiresDate == nil)
        try await h.advance("P5D")
        let recovered = try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "ok"
        }
        #expect(recovered.map(\.kind) == ["DID_RENEW/BILLING_RECOVERY"])
        #expect(recovered[0].status == .active)
        let now = h.simulator.now
        #expect(recovered[0].transaction?.purchaseDate == now)
        #expect(recovered[0].transaction?.expiresDate == ISODuration("P1M")!.added(to: now))
        #expect(recovered[0].transaction?.originalTransactionId == first.originalTransactionId)
        #expect(recovered[0].renewal?.isInBillingRetryPeriod == false)
    }

    @Test func billingFailureWithGraceThenGraceExpiryThenExpiryAfterSixtyDays() async throws {
        let h = try await Harness(grace: 16)
        let first = try await subscribed(h)
        try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "failing"
        }
        let failed = try await h.advance("P1M")
        #expect(failed.map(\.kind) == ["DID_FAIL_TO_RENEW/GRACE_PERIOD"])
        #expect(failed[0].status == .billingGracePeriod)
        let expiry = first.expiresDate!
        #expect(failed[0].renewal?.gracePeriodExpiresDate == expiry + 16 * Milliseconds.day)
        let graceOver = try await h.advance("P16D")
        #expect(graceOver.map(\.kind) == ["GRACE_PERIOD_EXPIRED"])
        #expect(graceOver[0].status == .billingRetry)
        #expect(graceOver[0].payload.signedDate == expiry + 16 * Milliseconds.day)
        let expired = try await h.advance("P50D")
        #expect(expired.map(\.kind) == ["EXPIRED/BILLING_RETRY"])
        #expect(expired[0].status == .expired)
        #expect(expired[0].renewal?.expirationIntent == .billingError)
        #expect(expired[0].payload.signedDate == expiry + 60 * Milliseconds.day)
    }

    @Test func recoveryWithinGraceKeepsTheRenewalDate() async throws {
        let h = try await Harness(grace: 16)
        let first = try await subscribed(h)
        try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "failing"
        }
        try await h.advance("P1M")
        try await h.advance("P3D")
        let recovered = try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "ok"
        }
        #expect(recovered.map(\.kind) == ["DID_RENEW/BILLING_RECOVERY"])
        #expect(recovered[0].transaction?.purchaseDate == first.expiresDate)
        #expect(recovered[0].transaction?.expiresDate == ISODuration("P1M")!.added(to: first.expiresDate!))
    }

    @Test func priceIncreaseDeclinedExpiresAcceptedRenewsAtTheNewPrice() async throws {
        let h = try await Harness()
        _ = try await subscribed(h)
        try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
        }
        let pending = try await h.perform("priceIncrease") {
            $0.product = "pro.monthly"
            $0.price = 12990
        }
        #expect(pending.map(\.kind) == ["PRICE_INCREASE/PENDING", "PRICE_INCREASE/PENDING"])
        #expect(pending[0].renewal?.priceIncreaseStatus == .customerHasNotResponded)
        #expect(pending[0].renewal?.renewalPrice == 12990)
        let accepted = try await h.perform("priceIncreaseResponse") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
            $0.accept = true
        }
        #expect(accepted.map(\.kind) == ["PRICE_INCREASE/ACCEPTED"])
        #expect(accepted[0].renewal?.priceIncreaseStatus == .customerConsentedOrWasNotifiedWithoutNeedingConsent)
        let out = try await h.advance("P1M")
        let byCustomer = Dictionary(uniqueKeysWithValues: out.map { ($0.transaction!.storefront!, $0) })
        #expect(byCustomer["USA"]?.kind == "EXPIRED/PRICE_INCREASE")
        #expect(byCustomer["USA"]?.renewal?.expirationIntent == .customerDidNotConsentToPriceIncrease)
        #expect(byCustomer["GBR"]?.kind == "DID_RENEW")
        #expect(byCustomer["GBR"]?.transaction?.price == 12990)
    }

    @Test func priceIncreaseWithoutConsentIsAccepted() async throws {
        let h = try await Harness()
        _ = try await subscribed(h)
        let out = try await h.perform("priceIncrease") {
            $0.product = "pro.monthly"
            $0.price = 10990
            $0.consentRequired = false
        }
        #expect(out.map(\.kind) == ["PRICE_INCREASE/ACCEPTED"])
    }
}

@Suite struct RefundAndExtensionTests {
    @Test func refundRevokesAndReversalReinstates() async throws {
        let h = try await Harness()
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await h.advance("P3D")
        let refund = try await h.perform("refund") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.reason = "appIssue"
        }
        #expect(refund.map(\.kind) == ["REFUND"])
        #expect(refund[0].status == .revoked)
        let tx = try #require(refund[0].transaction)
        #expect(tx.revocationDate == start + 3 * Milliseconds.day)
        #expect(tx.revocationReason == .appIssue)
        #expect(tx.revocationType == .refundFull)
        // A revoked subscription does not renew.
        #expect(try await h.advance("P2M").isEmpty)
        let reversed = try await h.perform("refundReversed") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        #expect(reversed.map(\.kind) == ["REFUND_REVERSED"])
        #expect(reversed[0].transaction?.revocationDate == nil)
        #expect(reversed[0].status == .expired)  // its period ended meanwhile
    }

    @Test func reversalWithinThePeriodRestoresAutoRenew() async throws {
        let h = try await Harness()
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let refund = try await h.perform("refund") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.prorated = true
        }
        #expect(refund[0].transaction?.revocationType == .refundProrated)
        #expect(refund[0].transaction?.revocationPercentage == 50_000)
        #expect(refund[0].renewal?.autoRenewStatus == .off)
        try await h.advance("P5D")
        let reversed = try await h.perform("refundReversed") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        #expect(reversed[0].status == .active)
        #expect(reversed[0].renewal?.autoRenewStatus == .on)
        #expect(reversed[0].transaction?.revocationType == nil)
        #expect(try await h.advance("P1M").map(\.kind) == ["DID_RENEW"])
    }

    @Test func refundDeclinedAndConsumptionRequest() async throws {
        let h = try await Harness()
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let request = try await h.perform("consumptionRequest") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.reason = "UNSATISFIED_WITH_PURCHASE"
        }
        #expect(request.map(\.kind) == ["CONSUMPTION_REQUEST"])
        #expect(request[0].payload.data?.consumptionRequestReason == .unsatisfiedWithPurchase)
        let declined = try await h.perform("refundDeclined") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        #expect(declined.map(\.kind) == ["REFUND_DECLINED"])
        #expect(declined[0].status == .active)
        #expect(declined[0].transaction?.revocationDate == nil)
    }

    @Test func consumptionRequestForAnEarlierTransaction() async throws {
        let h = try await Harness()
        let first = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
            $0.quantity = 10
        }
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
        }
        let firstId = try #require(first[0].transaction?.transactionId)
        let request = try await h.perform("consumptionRequest") {
            $0.customer = "alice"
            $0.product = "coins"
            $0.transactionId = firstId
        }
        #expect(request.map(\.kind) == ["CONSUMPTION_REQUEST"])
        #expect(request[0].transaction?.transactionId == firstId)
        #expect(request[0].transaction?.quantity == 10)
    }

    @Test func renewalDateExtensionOneAndMass() async throws {
        let h = try await Harness()
        let first = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.monthly"
        }
        let expiry = first[0].transaction!.expiresDate!
        let one = try await h.perform("extendRenewal") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.days = 10
        }
        #expect(one.map(\.kind) == ["RENEWAL_EXTENDED"])
        #expect(one[0].transaction?.expiresDate == expiry + 10 * Milliseconds.day)
        #expect(one[0].renewal?.renewalDate == expiry + 10 * Milliseconds.day)
        let mass = try await h.perform("massExtendRenewal") {
            $0.product = "pro.monthly"
            $0.days = 5
            $0.requestIdentifier = "req-1"
        }
        #expect(mass.map(\.kind) == ["RENEWAL_EXTENSION/SUMMARY"])
        let summary = try #require(mass[0].payload.summary)
        #expect(summary.succeededCount == 2)
        #expect(summary.failedCount == 0)
        #expect(summary.requestIdentifier == "req-1")
        #expect(summary.bundleId == bundleId)
        #expect(mass[0].payload.data == nil)
        let renewals = try await h.advance("P1M")
        #expect(renewals.isEmpty)
        let later = try await h.advance("P15D")
        #expect(later.count == 2)
    }

    @Test func testNotificationAndStorefrontChange() async throws {
        let h = try await Harness(environment: .production)
        let out = try await h.perform("test")
        #expect(out.map(\.kind) == ["TEST"])
        #expect(out[0].payload.data?.signedTransactionInfo == nil)
        #expect(out[0].payload.data?.appAppleId == appAppleId)
        #expect(out[0].status == nil)
        let changed = try await h.perform("storefront") {
            $0.customer = "alice"
            $0.storefront = "FRA"
        }
        #expect(changed.isEmpty)
        let bought = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
        }
        #expect(bought[0].transaction?.storefront == "FRA")
    }
}

@Suite struct FamilySharingTests {
    @Test func purchaseIsSharedRenewedAndRevokedWhenAMemberLeaves() async throws {
        let h = try await Harness()
        try await h.perform("customer") { $0.customer = "carol" }
        try await h.perform("family") {
            $0.family = "smiths"
            $0.members = ["alice", "bob", "carol"]
        }
        let bought = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        #expect(bought.map(\.kind) == ["SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/INITIAL_BUY"])
        #expect(bought.map { $0.transaction?.inAppOwnershipType } == [.purchased, .familyShared, .familyShared])
        let purchaserOriginal = bought[0].transaction!.originalTransactionId
        #expect(Set(bought.map { $0.transaction!.originalTransactionId }).count == 3)
        #expect(bought[1].transaction?.expiresDate == bought[0].transaction?.expiresDate)
        #expect(bought[1].transaction?.originalTransactionId != purchaserOriginal)

        let renewed = try await h.advance("P1M")
        #expect(renewed.map(\.kind) == ["DID_RENEW", "DID_RENEW", "DID_RENEW"])
        #expect(renewed.map { $0.transaction?.inAppOwnershipType } == [.purchased, .familyShared, .familyShared])

        let left = try await h.perform("leaveFamily") { $0.customer = "bob" }
        #expect(left.map(\.kind) == ["REVOKE"])
        #expect(left[0].status == .revoked)
        #expect(left[0].transaction?.inAppOwnershipType == .familyShared)
        #expect(left[0].transaction?.revocationType == .familyRevoke)
        #expect(left[0].transaction?.storefront == "GBR")

        let off = try await h.perform("familySharing") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.enabled = false
        }
        #expect(off.map(\.kind) == ["REVOKE"])
        let on = try await h.perform("familySharing") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.enabled = true
        }
        #expect(on.map(\.kind) == ["SUBSCRIBED/INITIAL_BUY"])
        #expect(on[0].transaction?.inAppOwnershipType == .familyShared)

        // A refund of the purchaser revokes the family's access.
        let refund = try await h.perform("refund") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        #expect(refund.map(\.kind) == ["REFUND", "REVOKE"])
    }

    @Test func familiesHoldAtMostSix() async throws {
        let h = try await Harness(customers: false)
        for i in 1...7 { try await h.perform("customer") { $0.customer = "c\(i)" } }
        await #expect(throws: SimulatorError.self) {
            try await h.perform("family") {
                $0.family = "big"
                $0.members = (1...7).map { "c\($0)" }
            }
        }
        try await h.perform("family") {
            $0.family = "big"
            $0.members = (1...6).map { "c\($0)" }
        }
        await #expect(throws: SimulatorError.self) {
            try await h.perform("joinFamily") {
                $0.family = "big"
                $0.customer = "c7"
            }
        }
    }

    @Test func shareableNonConsumableReachesTheFamily() async throws {
        let h = try await Harness()
        try await h.perform("family") {
            $0.family = "f"
            $0.members = ["alice", "bob"]
        }
        let out = try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "noads"
        }
        #expect(out.map(\.kind) == ["ONE_TIME_CHARGE", "ONE_TIME_CHARGE"])
        #expect(out.map { $0.transaction?.inAppOwnershipType } == [.purchased, .familyShared])
    }
}
