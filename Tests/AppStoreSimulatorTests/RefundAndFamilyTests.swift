import AppStore
import AppStoreSimulator
import Foundation
import Testing

// Refunds, reversals, consumption requests, extensions, and Family Sharing.

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
