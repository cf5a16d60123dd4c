import Entitlements
import Foundation
import Testing

@testable import Storage

/// Rollups written for Play customers before their purchases had a store segment, Apple's
/// storefront code and prices: the migration forgets them and the backfill recomputes them, so
/// the charts and metrics equal those of a fresh ingestion; App Store customers stay untouched.
@Suite struct PlayRollupMigrationTests {
    static let day: Int64 = 86_400_000
    static let projector = Projector(
        policy: Policy(products: [
            "com.example.pro": ProductPolicy(type: .autoRenewable, entitlements: ["pro"]),
            "play.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium"),
            "play.lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["lifetime"]),
        ]), maintainsMetrics: true)
    static let version = Schema.migrations.first { $0.name == "Play customers' rollups recomputed" }!.version

    static func play(_ token: String, region: String) -> SignedFact {
        (.playSubscription(
            PlaySubscriptionFact(
                purchaseToken: token, packageName: "com.example.app", productId: "play.monthly", basePlanId: "monthly", state: .active,
                startTime: testNow, expiryTime: testNow + 30 * day, autoRenewEnabled: true, latestOrderId: "GPA.\(token).0",
                regionCode: region, observedAt: testNow, price: 9_990, currency: "USD", periodType: .normal)), nil)
    }

    static func product(_ token: String, region: String) -> SignedFact {
        (.playProduct(
            PlayProductFact(
                purchaseToken: token, packageName: "com.example.app", productId: "play.lifetime", orderId: "GPA.\(token)",
                purchaseState: 0, purchaseTime: testNow, regionCode: region, observedAt: testNow)), nil)
    }

    /// Every rollup row: the metrics and every chart series split by every segment, the chart
    /// rows in a fixed order (a read returns them in the order the database groups them, which
    /// follows where the rows lie; the charts sum them).
    static func rollups(_ store: any LedgerStore) async throws -> (MetricRollup, ChartRows) {
        let day0 = metricDay(testNow)
        let metrics = try await store.metricRollup(environment: "Production", fromDay: day0 - 1, toDay: day0 + 90)
        let charts = try await store.chartRows(
            environments: ["Production"], kinds: ChartKind.allCases, fromDay: day0 - 1, toDay: day0 + 90,
            segments: Set(ChartSegmentation.allCases))
        return (metrics, ChartRows(opening: charts.opening.sorted(by: { "\($0)" < "\($1)" }), days: charts.days.sorted(by: { "\($0)" < "\($1)" })))
    }

    @Test(arguments: Backend.all)
    func stalePlayRollupsAreRebuiltLikeAFreshIngestion(_ backend: Backend) async throws {
        // The rebuild check evaluates with the shared test policy, which knows no Play product.
        try await withStore(backend, checksRebuild: false) { store, _ in
            let p = Self.projector
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o1", tid: "t1", expires: testNow + 30 * Self.day, signed: testNow)],
                              claim: Claim(appUserId: "alice")), projector: p, now: testNow)
            _ = try await store.ingest(Fixture.batch(facts: [Self.play("p1", region: "US")], claim: Claim(appUserId: "gina")), projector: p, now: testNow)
            _ = try await store.ingest(Fixture.batch(facts: [Self.product("c1", region: "DE")], claim: Claim(appUserId: "hank")), projector: p, now: testNow)
            let fresh = try await Self.rollups(store)
            #expect(fresh.1.days.contains { $0.segment.store == "playStore" && $0.segment.storefront == "USA" })
            #expect(fresh.1.days.contains { $0.segment.store == "playStore" && $0.segment.storefront == "DEU" })
            let alice = try await store.count("SELECT LENGTH(deltas) FROM customer_metrics m JOIN customers c ON c.id = m.customer_id WHERE c.app_user_id = 'alice'")

            // As an older server wrote them: Play rows under `appStore`, by Google's country codes,
            // in the daily rows and in each customer's stored contribution alike.
            try await store.foldJournal()
            for (old, new) in [("USA", "US"), ("DEU", "DE")] {
                try await store.raw("UPDATE chart_daily SET store = 'appStore', storefront = '\(new)' WHERE storefront = '\(old)'")
                try await store.raw("UPDATE customer_metrics SET deltas = REPLACE(REPLACE(deltas, 'playStore', 'appStore'), '\t\(old)\t', '\t\(new)\t')")
            }
            let stale = try await Self.rollups(store)
            #expect(stale.1 != fresh.1)
            #expect(stale.0 == fresh.0, "the metrics have no store or storefront")

            try await store.raw("DELETE FROM schema_migrations WHERE version = \(Self.version)")
            let report = try await store.migrate()
            #expect(report.applied == [Self.version])
            #expect(try await store.count("SELECT COUNT(*) FROM customer_metrics") == 1, "only the App Store customer keeps hers")
            #expect(try await store.count(
                "SELECT LENGTH(deltas) FROM customer_metrics m JOIN customers c ON c.id = m.customer_id WHERE c.app_user_id = 'alice'") == alice)
            #expect(try await store.count("SELECT COUNT(*) FROM chart_daily WHERE store = 'appStore' AND storefront IN ('US', 'DE')") == 0)

            #expect(try await store.backfillMetrics(projector: p, limit: 10) == 2)
            let rebuilt = try await Self.rollups(store)
            #expect(rebuilt.0 == fresh.0)
            #expect(rebuilt.1 == fresh.1)
            try await store.foldJournal()
            #expect(try await store.count("SELECT COUNT(*) FROM chart_daily WHERE value = 0") == 0)
            #expect(try await store.count("SELECT COUNT(*) FROM metric_daily WHERE value = 0") == 0)
        }
    }
}
