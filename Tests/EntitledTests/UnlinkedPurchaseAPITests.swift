import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// A purchase Apple notifies without an `appAccountToken`: the admin view answers it with no
/// customer, the console finds and counts it as unlinked, its events name nobody, and the app
/// posting the transaction makes it the customer's.
@Suite struct UnlinkedPurchaseAPITests {
    static let console = APIHarness.console

    @Test func anUnlinkedPurchaseIsAnsweredSearchableCountedAndLinkedByTheApp() async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            let day: Int64 = 86_400_000
            let start = APIHarness.start
            let bought = Apple.transaction(otid: "o7", tid: "t7", purchase: start, expires: start + 30 * day)
            #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)

            let subscription = try await api.send("GET", "/v1/subscriptions/o7", auth: APIHarness.admin)
            #expect(subscription.status == 200)
            #expect(subscription.json["appUserId"] is NSNull && subscription.json["appAccountToken"] is NSNull)
            #expect((subscription.json["subscription"] as? [String: Any])?["status"] as? String == "active")

            for query in ["o7", "t7"] {
                let found = try await api.send("GET", "/v1/console/customers?q=\(query)", auth: Self.console)
                let customers = try #require(found.json["customers"] as? [[String: Any]])
                #expect(customers.count == 1 && customers.first?["appUserId"] is NSNull, "\(query)")
                #expect(customers.first?["originalTransactionId"] as? String == "o7", "\(query)")
            }
            let everyone = try await api.send("GET", "/v1/console/customers", auth: Self.console)
            #expect((everyone.json["customers"] as? [Any])?.isEmpty == true, "a placeholder is listed by none of its ids")

            let path = "/v1/metrics/overview?from=2027-01-14&to=2027-01-20"
            var overview = try await api.send("GET", path, auth: Self.console)
            #expect(overview.json["unlinkedActiveSubscriptions"] as? Int == 1)
            var last = try #require((overview.json["series"] as? [[String: Any]])?.last)
            #expect(last["activeSubscriptions"] as? Int == 1)
            #expect((last["mrr"] as? [String: Double])?["USD"] == 9.99)
            #expect(Self.revenue(overview) == 9.99)

            let events = try await api.send("GET", "/v1/events?after=0&limit=100", auth: APIHarness.reader)
            let unlinked = try #require(events.json["events"] as? [[String: Any]])
            #expect(unlinked.map { $0["type"] as? String }.contains("subscription.started"))
            #expect(unlinked.allSatisfy { $0["appUserId"] is NSNull && $0["originalTransactionId"] as? String == "o7" }, "\(unlinked)")

            // The app posts it for bob: it is his, and no longer unlinked.
            let posted = try await api.send(
                "POST", "/v1/customers/bob/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(FakeJWS.make(bought))"}"#)
            #expect(posted.entitlement("pro")?["active"] as? Bool == true)
            #expect(try await api.send("GET", "/v1/subscriptions/o7", auth: APIHarness.admin).json["appUserId"] as? String == "bob")
            let found = try await api.send("GET", "/v1/console/customers?q=o7", auth: Self.console)
            #expect((found.json["customers"] as? [[String: Any]])?.map { $0["appUserId"] as? String } == ["bob"])
            overview = try await api.send("GET", path, auth: Self.console)
            #expect(overview.json["unlinkedActiveSubscriptions"] as? Int == 0)
            last = try #require((overview.json["series"] as? [[String: Any]])?.last)
            #expect(last["activeSubscriptions"] as? Int == 1)
            #expect(Self.revenue(overview) == 9.99, "moved to bob, not bought again")
        }
    }

    /// The overview's USD revenue over its whole range.
    static func revenue(_ overview: Loopback.Reply) -> Double {
        ((overview.json["series"] as? [[String: Any]]) ?? []).reduce(0) { $0 + ((($1["revenue"] as? [String: Double])?["USD"]) ?? 0) }
    }
}
