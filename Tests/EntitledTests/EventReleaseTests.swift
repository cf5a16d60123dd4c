@testable import EntitledTestSupport
import Foundation
import Storage
import Testing

/// Held events through the composed server: the feed lists an answer-change event only once the
/// customer's history has settled, on the injected clock (`events.settleSeconds`).
@Suite struct EventReleaseTests {
    static func page(_ reply: Loopback.Reply) throws -> [String] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
        return (object["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
    }

    @Test(arguments: EventOrderBackend.all)
    func feedListsEventsOnceReleased(backend: EventOrderBackend) async throws {
        let recorded = try await RecordedDeliveries.record(try Scenario.load("subscription-v2"))
        try await recorded.serve(backend: backend, settleSeconds: 5) { server in
            let feed = { try Self.page(try await Loopback.send(port: server.port, "GET", "/v1/events", headers: ["Authorization": APIHarness.reader])) }
            let sent = recorded.deliveries[0].sentAt
            server.clock.set(milliseconds: sent)
            try await server.post(0)
            #expect(try await feed().isEmpty)
            server.clock.set(milliseconds: sent + 4_999)
            #expect(try await server.releaser.releaseDue() == 0)
            #expect(try await feed().isEmpty)
            server.clock.set(milliseconds: sent + 5_000)
            #expect(try await server.releaser.releaseDue() == 1)
            #expect(try await feed() == ["subscription.started"])
            let events = try await RecordedDeliveries.events(server.store)
            #expect(events.map(\.recordedAt) == [sent + 5_000])
        }
    }

    @Test func settleZeroDerivesAtTheCommit() async throws {
        let recorded = try await RecordedDeliveries.record(try Scenario.load("subscription-v2"))
        try await recorded.serve(backend: .sqliteMemory, settleSeconds: 0) { server in
            server.clock.set(milliseconds: recorded.deliveries[0].sentAt)
            try await server.post(0)
            #expect(try await RecordedDeliveries.events(server.store).map(\.type) == ["subscription.started"])
        }
    }
}
