import Entitlements
import Foundation
import Testing

@testable import Storage

/// Play purchases stored before `play_orders` was kept: the migration records their orders from
/// the stored snapshots, as the ledger records new ones, so a refund review of an older order
/// (or of a renewal the ledger never saw) finds its purchase.
@Suite struct PlayOrderMigrationTests {
    static let version = Schema.migrations.first { $0.name == "play orders of earlier purchases" }!.version
    static let package = "com.example"

    static func subscription(_ token: String, order: String, observed: Int64) -> SignedFact {
        (.playSubscription(
            PlaySubscriptionFact(
                purchaseToken: token, packageName: package, productId: "play.monthly", basePlanId: "monthly", state: .active,
                startTime: testNow, expiryTime: observed + 30 * 86_400_000, autoRenewEnabled: true, latestOrderId: order,
                observedAt: observed)), nil)
    }

    @Test(arguments: Backend.all)
    func earlierPurchasesGetTheirOrders(_ backend: Backend) async throws {
        try await withStore(backend, checksRebuild: false) { store, _ in
            let p = PlayRollupMigrationTests.projector
            let product: SignedFact = (.playProduct(
                PlayProductFact(
                    purchaseToken: "c1", packageName: Self.package, productId: "play.lifetime", orderId: "GPA.c1", purchaseState: 0,
                    purchaseTime: testNow, observedAt: testNow)), nil)
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.subscription("p1", order: "GPA.p1", observed: testNow)], claim: Claim(appUserId: "gina")),
                projector: p, now: testNow)
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.subscription("p1", order: "GPA.p1..0", observed: testNow + 1000)]), projector: p, now: testNow)
            _ = try await store.ingest(Fixture.batch(facts: [product], claim: Claim(appUserId: "hank")), projector: p, now: testNow)
            #expect(try await store.count("SELECT COUNT(*) FROM play_orders") == 3)

            // As an older server stored them: no order rows.
            try await store.raw("DELETE FROM play_orders")
            #expect(try await store.playOrder(packageName: Self.package, orderId: "GPA.c1") == nil)
            try await store.raw("DELETE FROM schema_migrations WHERE version = \(Self.version)")
            let report = try await store.migrate()
            #expect(report.applied == [Self.version])

            #expect(try await store.count("SELECT COUNT(*) FROM play_orders") == 3)
            #expect(try await store.playOrder(packageName: Self.package, orderId: "GPA.c1")
                == PlayOrder(orderId: "GPA.c1", purchaseToken: "c1", productId: "play.lifetime", isSubscription: false))
            #expect(try await store.playOrder(packageName: Self.package, orderId: "GPA.p1..0")?.purchaseToken == "p1")
            // A renewal order never stored is found by its subscription's first order.
            #expect(try await store.playOrder(packageName: Self.package, orderId: "GPA.p1..5")?.purchaseToken == "p1")
            // Run again (nothing to add): the rows stay.
            try await store.raw("DELETE FROM schema_migrations WHERE version = \(Self.version)")
            _ = try await store.migrate()
            #expect(try await store.count("SELECT COUNT(*) FROM play_orders") == 3)
        }
    }
}
