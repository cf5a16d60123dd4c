import Entitlements
import Foundation
import Storage
import Testing

@testable import EntitledServer
@testable import Exports

/// Google Play purchases in the `transactions` table of scheduled exports, beside App Store ones
/// (SQLite, and PostgreSQL with `ENTITLED_TEST_POSTGRES`; CSV and JSON Lines): each stored answer
/// about an order is a version of it with the columns that mean the same filled, run by run.
@Suite(.serialized) struct PlayExportTests {
    static let day: Int64 = 86_400_000
    static let start = ExportHarness.start
    static let cases: [(ExportBackend, ExportFormat)] = ExportBackend.all.flatMap { backend in ExportFormat.allCases.map { (backend, $0) } }

    static func subscription(order: String, startTime: Int64, expiry: Int64, observedAt: Int64, account: String? = nil) -> Fact {
        .playSubscription(
            PlaySubscriptionFact(
                purchaseToken: "tok-sub", packageName: "com.example.app", productId: "play.monthly", basePlanId: "monthly", state: .active,
                startTime: startTime, expiryTime: expiry, autoRenewEnabled: true, latestOrderId: order, acknowledged: true,
                obfuscatedExternalAccountId: account, regionCode: "US", observedAt: observedAt, price: 9_990, currency: "USD", periodType: .normal))
    }

    /// A license tester's purchase of three units; `refundable` units not refunded yet.
    static func coins(refundable: Int, observedAt: Int64) -> Fact {
        .playProduct(
            PlayProductFact(
                purchaseToken: "tok-coins", packageName: "com.example.app", productId: "play.coins", orderId: "GPA.2", purchaseState: 0,
                quantity: 3, purchaseTime: start - 500, acknowledged: true, regionCode: "DE",
                observedAt: observedAt, environment: .sandbox, refundableQuantity: refundable))
    }

    static func iso(_ milliseconds: Int64) -> String { ExportValue.iso8601(milliseconds) }

    /// The rows of `table`'s file of a committed run, the ledger id dropped (checked for order apart).
    static func rows(_ harness: ExportHarness, _ result: ExportRunResult, _ format: ExportFormat) async throws -> [[String: String]] {
        let rows = try await ScheduledExportTests.rows(harness, result, .transactions, format)
        let ids = rows.compactMap { $0["ledger_id"].flatMap { Int64($0) } }
        #expect(ids.count == rows.count && ids == ids.sorted(), "every row has its ledger id, in ledger order")
        return rows.map { $0.filter { $0.key != "ledger_id" } }
    }

    @Test("Play orders and App Store transactions land in one transactions file, the same columns filled, incrementally", arguments: cases)
    func playAndAppleTransactions(backend: ExportBackend, format: ExportFormat) async throws {
        try await ExportHarness.with(backend, .file) { harness in
            try await harness.buy("alice", otid: "o1", tid: "t1")
            try await harness.play("gina", [Self.subscription(order: "GPA.1", startTime: Self.start - 1000, expiry: Self.start + Self.day, observedAt: Self.start)])
            try await harness.play("hank", [Self.coins(refundable: 3, observedAt: Self.start)])
            harness.clock.advance(milliseconds: 10 * 60_000)
            let export = harness.export(format: format)
            let first = try await Self.rows(harness, try await export.runOnce(), format)
            #expect(first.map { $0["transaction_id"] } == ["t1", "GPA.1", "GPA.2"])
            #expect(first.map { $0["store"] } == ["appStore", "playStore", "playStore"])
            // The App Store row loads back as the ledger's transaction and has no Play column.
            let ledger = try await harness.ledgerTransactions(["alice"])
            #expect(try ExportFiles.transaction(first[0]) == ledger["t1"])
            #expect(first[0]["refunded_quantity"] == nil)
            let subscriptionRow: [String: String] = [
                "transaction_id": "GPA.1", "original_transaction_id": "tok-sub", "app_user_id": "gina", "bundle_id": "com.example.app",
                "environment": "Production", "product_id": "play.monthly", "product_type": "autoRenewable",
                "purchase_date": Self.iso(Self.start - 1000), "original_purchase_date": Self.iso(Self.start - 1000),
                "expires_date": Self.iso(Self.start + Self.day), "quantity": "1", "price_milli": "9990", "currency": "USD",
                "storefront": "USA", "transaction_reason": "PURCHASE", "ownership": "purchased", "is_upgraded": "false",
                "signed_date": Self.iso(Self.start), "received_at": Self.iso(Self.start), "store": "playStore",
            ]
            #expect(first[1] == subscriptionRow)
            var coinsRow: [String: String] = [
                "transaction_id": "GPA.2", "original_transaction_id": "tok-coins", "app_user_id": "hank", "bundle_id": "com.example.app",
                "environment": "Sandbox", "product_id": "play.coins", "product_type": "consumable", "purchase_date": Self.iso(Self.start - 500),
                "quantity": "3", "storefront": "DEU", "transaction_reason": "PURCHASE", "ownership": "purchased", "is_upgraded": "false",
                "signed_date": Self.iso(Self.start), "received_at": Self.iso(Self.start),
                "store": "playStore", "refunded_quantity": "0",
            ]
            #expect(first[2] == coinsRow)

            // A day later: the subscription renews (a new order, Google now naming Gina's token), one
            // coin is refunded by quantity (Google's fresh answer and the voiding), and Alice renews.
            let secondAt = Self.start + Self.day + 60_000
            harness.clock.set(milliseconds: secondAt)
            let account = try #require(try await harness.store.customer(appUserId: "gina")).appAccountToken
            try await harness.play(
                "gina",
                [Self.subscription(order: "GPA.1..0", startTime: Self.start - 1000, expiry: Self.start + 2 * Self.day, observedAt: secondAt, account: account)])
            let partial = PlayVoidedPurchaseFact(
                purchaseToken: "tok-coins", orderId: "GPA.2", productType: 2, refundType: 2, voidedTime: secondAt - 2000, environment: .sandbox)
            try await harness.play("hank", [Self.coins(refundable: 2, observedAt: secondAt), .playVoided(partial)])
            try await harness.buy("alice", otid: "o1", tid: "t2")
            harness.clock.set(milliseconds: Self.start + Self.day + 11 * 60_000)
            let second = try await Self.rows(harness, try await export.runOnce(), format)
            #expect(second.map { $0["transaction_id"] } == ["GPA.1..0", "GPA.2", "GPA.2", "t2"], "only what changed since the first run")
            var renewal = subscriptionRow
            renewal["transaction_id"] = "GPA.1..0"
            renewal["transaction_reason"] = "RENEWAL"
            renewal["purchase_date"] = Self.iso(Self.start + Self.day)  // the earlier order's end
            renewal["expires_date"] = Self.iso(Self.start + 2 * Self.day)
            renewal["signed_date"] = Self.iso(secondAt)
            renewal["received_at"] = Self.iso(secondAt)
            renewal["app_account_token"] = account
            #expect(second[0] == renewal)
            coinsRow["refunded_quantity"] = "1"
            coinsRow["signed_date"] = Self.iso(secondAt)
            coinsRow["received_at"] = Self.iso(secondAt)
            #expect(second[1] == coinsRow, "the fresh answer: one unit refunded, the purchase kept")
            #expect(second[2] == coinsRow, "the voiding: a version of the same order")
            #expect(second[3]["store"] == "appStore")

            // The renewal order is refunded in full: a version of it with the voiding's date.
            let thirdAt = Self.start + 2 * Self.day + 60_000
            harness.clock.set(milliseconds: thirdAt)
            let refund = PlayVoidedPurchaseFact(purchaseToken: "tok-sub", orderId: "GPA.1..0", productType: 1, refundType: 1, voidedTime: thirdAt - 5000)
            try await harness.play("gina", [.playVoided(refund)])
            harness.clock.set(milliseconds: Self.start + 2 * Self.day + 12 * 60_000)
            let third = try await Self.rows(harness, try await export.runOnce(), format)
            renewal["revocation_date"] = Self.iso(thirdAt - 5000)
            renewal["signed_date"] = Self.iso(thirdAt - 5000)
            renewal["received_at"] = Self.iso(thirdAt)
            #expect(third == [renewal], "signed_date: the latest instant Google reported, the voiding's")
        }
    }

    @Test("a Play purchase not charged yet is no row, and rows after it still fill the page", arguments: ExportBackend.all)
    func pendingPurchaseIsNoRow(backend: ExportBackend) async throws {
        try await ExportHarness.with(backend, .file) { harness in
            let pending = PlaySubscriptionFact(
                purchaseToken: "tok-pending", packageName: "com.example.app", productId: "play.monthly", state: .pending, startTime: nil,
                expiryTime: nil, latestOrderId: "GPA.9", observedAt: Self.start)
            try await harness.play("gina", [.playSubscription(pending)])
            try await harness.buy("alice", otid: "o1", tid: "t1")
            harness.clock.advance(milliseconds: 10 * 60_000)
            let rows = try await Self.rows(harness, try await harness.export().runOnce(), .csv)
            #expect(rows.map { $0["transaction_id"] } == ["t1"])
            // One row at a time: the pending fact is skipped without ending the reading early.
            let page = try await harness.store.exportTransactions(
                ExportWindow(after: nil, through: Self.start + 60_000), afterID: 0, limit: 1, projector: ExportHarness.projector)
            #expect(page.map(\.fact.transactionId) == ["t1"])
        }
    }
}
