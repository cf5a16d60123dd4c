import Entitlements
import Foundation
import Testing

@testable import Storage

/// Support actions in `customer_events` on every backend: one row per customer concerned (an
/// alias's under its customer), a row with no customer when none, bounded, read newest first,
/// and erased with the customer.
@Suite struct SupportActionTests {
    @Test(arguments: Backend.all)
    func recordedPerCustomerReadNewestFirstAndErased(_ backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let console = store
            _ = try await store.directory.addAlias("a-alias", to: "a", actor: nil, projector: testProjector, now: testNow)
            _ = try await store.ensureCustomer(appUserId: "b", appAccountToken: nil, projector: testProjector, now: testNow)
            func action(_ name: String, _ subject: String, at: Int64, detail: String = #"{"outcome":"OK"}"#) -> SupportAction {
                SupportAction(action: name, subject: subject, actor: "ops", detail: detail, recordedAt: at)
            }
            try await console.recordSupportAction(action("order_lookup", "M1", at: testNow), appUserIds: ["a-alias", "b", "nobody"])
            try await console.recordSupportAction(
                action("extend", String(repeating: "9", count: 300), at: testNow + 1, detail: String(repeating: "x", count: 3000)),
                appUserIds: ["a"])
            try await console.recordSupportAction(action("order_lookup", "M2", at: testNow + 2), appUserIds: [])

            let a = try await console.supportActions(appUserId: "a-alias", limit: 10)
            #expect(a.map(\.action) == ["extend", "order_lookup"])
            #expect(a.first?.subject.utf8.count == SupportAction.maxSubject)
            #expect(a.first?.detail == #"{"truncated":true}"#)
            #expect(a.last?.actor == "ops" && a.last?.recordedAt == testNow)
            #expect(try await console.supportActions(appUserId: "b", limit: 10).map(\.subject) == ["M1"])
            #expect(try await store.count("SELECT COUNT(*) FROM customer_events WHERE customer_id IS NULL AND kind = 'support.order_lookup'") == 1)

            _ = try await store.directory.eraseCustomer(appUserId: "a", actor: "ops", now: testNow + 3)
            #expect(try await console.supportActions(appUserId: "b", limit: 10).count == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM customer_events WHERE kind LIKE 'support.%'") == 2)
        }
    }
}
