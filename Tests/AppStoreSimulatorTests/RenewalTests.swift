import AppStore
import AppStoreSimulator
import Foundation
import Testing

// Renewals on the virtual clock: product changes, billing failures, grace and price increases.

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
