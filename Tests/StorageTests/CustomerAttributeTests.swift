import Entitlements
import Foundation
import Testing

@testable import Storage

/// Customer attributes (`customer_attributes`) on every backend.
@Suite struct CustomerAttributeTests {
    @Test("attributes are set, replaced and removed per customer, bounded in number", arguments: Backend.all)
    func setReplaceRemoveAndBound(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            #expect(try await store.attributes(appUserId: "alice") == nil)
            #expect(try await store.setAttributes(appUserId: "alice", changes: ["a": "1"], maxCount: 3, now: 1) == .customerNotFound)
            for id in ["alice", "bob"] {
                _ = try await store.ensureCustomer(appUserId: id, appAccountToken: nil, projector: testProjector, now: testNow)
            }
            #expect(try await store.attributes(appUserId: "alice") == [])
            let first = try await store.setAttributes(appUserId: "alice", changes: ["$email": "a@example.com", "plan": "team"], maxCount: 3, now: 10)
            #expect(first == .stored([CustomerAttribute(name: "$email", value: "a@example.com", updatedAt: 10), CustomerAttribute(name: "plan", value: "team", updatedAt: 10)]))
            // One replaced, one removed, one added; the others stay.
            let second = try await store.setAttributes(appUserId: "alice", changes: ["plan": "solo", "$email": nil, "level": "3"], maxCount: 3, now: 20)
            #expect(second == .stored([CustomerAttribute(name: "level", value: "3", updatedAt: 20), CustomerAttribute(name: "plan", value: "solo", updatedAt: 20)]))
            // Past the bound nothing is written.
            #expect(try await store.setAttributes(appUserId: "alice", changes: ["x": "1", "y": "2"], maxCount: 3, now: 30) == .tooMany(4))
            #expect(try await store.attributes(appUserId: "alice")?.map(\.name) == ["level", "plan"])
            // Replacing at the bound is allowed.
            _ = try await store.setAttributes(appUserId: "alice", changes: ["x": "1"], maxCount: 3, now: 30)
            #expect(try await store.setAttributes(appUserId: "alice", changes: ["x": "2", "level": nil], maxCount: 2, now: 40)
                == .stored([CustomerAttribute(name: "plan", value: "solo", updatedAt: 20), CustomerAttribute(name: "x", value: "2", updatedAt: 40)]))
            #expect(try await store.attributes(appUserId: "bob") == [])
        }
    }

    @Test("a merged customer's attributes are one set, the latest value of each name", arguments: Backend.all)
    func mergedCustomersShareAttributes(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            for id in ["main", "other"] {
                _ = try await store.ensureCustomer(appUserId: id, appAccountToken: nil, projector: testProjector, now: testNow)
            }
            _ = try await store.setAttributes(appUserId: "main", changes: ["plan": "team", "$locale": "en_US"], maxCount: 10, now: 10)
            _ = try await store.setAttributes(appUserId: "other", changes: ["plan": "solo"], maxCount: 10, now: 20)
            _ = try await store.directory.addAlias("other", to: "main", actor: nil, projector: testProjector, now: testNow)
            let merged = try #require(try await store.attributes(appUserId: "main"))
            #expect(merged.map { "\($0.name)=\($0.value)" } == ["$locale=en_US", "plan=solo"])
            #expect(try await store.attributes(appUserId: "other") == merged)
            // A write through either id replaces the name for the customer.
            _ = try await store.setAttributes(appUserId: "other", changes: ["plan": "pro"], maxCount: 10, now: 30)
            #expect(try await store.attributes(appUserId: "main")?.first { $0.name == "plan" }?.value == "pro")
            #expect(try await store.count("SELECT COUNT(*) FROM customer_attributes WHERE name = 'plan'") == 1)
        }
    }

    @Test("events carry their customer's attributes now; an alias's events its merged customer's", arguments: Backend.all)
    func eventsCarryTheCustomersAttributes(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let day: Int64 = 86_400_000
            for (id, otid) in [("main", "o1"), ("other", "o2")] {
                let batch = Fixture.batch(
                    uuid: "n-\(id)", facts: [Fixture.transaction(otid: otid, tid: "t-\(otid)", expires: testNow + 20 * day, signed: testNow - day)],
                    claim: Claim(appUserId: id))
                _ = try await store.ingest(batch, projector: testProjector, now: testNow)
            }
            _ = try await store.setAttributes(appUserId: "main", changes: ["plan": "team", "$locale": "en_US"], maxCount: 10, now: 10)
            _ = try await store.setAttributes(appUserId: "other", changes: ["plan": "solo"], maxCount: 10, now: 20)
            var started = try await store.events(after: 0, limit: 100).filter { $0.type == "subscription.started" }
            #expect(started.map(\.appUserId) == ["main", "other"])
            #expect(started.map(\.attributes) == [["plan": "team", "$locale": "en_US"], ["plan": "solo"]])
            // Once merged, both customers' events are one customer's, in one batch and one at a time.
            _ = try await store.directory.addAlias("other", to: "main", actor: nil, projector: testProjector, now: testNow)
            let merged: [String: String] = ["plan": "solo", "$locale": "en_US"]
            started = try await store.events(after: 0, limit: 100).filter { $0.type == "subscription.started" }
            #expect(started.map(\.attributes) == [merged, merged])
            for event in started {
                let alone = try await store.events(after: event.sequence - 1, limit: 1)
                #expect(alone.first?.attributes == merged)
            }
        }
    }

    @Test("the console's search finds a customer by an attribute's value, exactly", arguments: Backend.all)
    func searchFindsAnAttributeValue(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            for id in ["ana", "bob"] {
                _ = try await store.ensureCustomer(appUserId: id, appAccountToken: nil, projector: testProjector, now: testNow)
            }
            _ = try await store.setAttributes(appUserId: "ana", changes: ["$email": "ana@example.com"], maxCount: 10, now: 10)
            _ = try await store.setAttributes(appUserId: "bob", changes: ["team": "ana@example"], maxCount: 10, now: 10)
            let console = store as any ConsoleStore
            #expect(try await console.searchCustomers("ana@example.com", after: nil, limit: 10).map(\.appUserId) == ["ana"])
            #expect(try await console.exactCustomers(["ana@example.com"]).map(\.appUserId) == ["ana"])
            // Removed: no longer found.
            _ = try await store.setAttributes(appUserId: "ana", changes: ["$email": nil], maxCount: 10, now: 20)
            #expect(try await console.searchCustomers("ana@example.com", after: nil, limit: 10).isEmpty)
        }
    }
}
