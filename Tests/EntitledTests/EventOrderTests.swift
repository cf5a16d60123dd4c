import AppStoreTesting
import Foundation
import Storage
import Testing

/// The simulator's lifecycles (the scenario files) delivered in order, reversed, shuffled and
/// duplicated, on SQLite and PostgreSQL: the outbox ends with the same events — ids, types,
/// instants and payloads but what the commit that found them says (``OutboxEvent/orderIndependent``)
/// — each once, and a rebuild adds none. Out of order, auto-renew and price-increase events may
/// also be dated by a later fact (``datedByTheirFact``); none of the in-order ones is lost.
@Suite struct EventOrderTests {
    /// Each scenario recorded once and its in-order run, shared by the other orders.
    actor References {
        static let shared = References()
        private var recordings: [String: RecordedDeliveries] = [:]
        private var outcomes: [String: RecordedDeliveries.Outcome] = [:]

        func reference(_ name: String, _ backend: EventOrderBackend) async throws -> (RecordedDeliveries, RecordedDeliveries.Outcome) {
            let recorded: RecordedDeliveries
            if let known = recordings[name] {
                recorded = known
            } else {
                recorded = try await RecordedDeliveries.record(try Scenario.load(name))
                recordings[name] = recorded
            }
            let key = "\(name) \(backend.rawValue)"
            if let outcome = outcomes[key] { return (recorded, outcome) }
            let outcome = try await recorded.deliver(order: Array(recorded.deliveries.indices), backend: backend)
            outcomes[key] = outcome
            return (recorded, outcome)
        }
    }

    enum Order: Sendable, CustomTestStringConvertible {
        case reversed, shuffled(seed: UInt64), duplicated(seed: UInt64)
        static let all: [Order] = [.reversed, .shuffled(seed: 1), .shuffled(seed: 2), .shuffled(seed: 3), .duplicated(seed: 4)]

        var testDescription: String {
            switch self {
            case .reversed: "reversed"
            case .shuffled(let seed): "shuffled \(seed)"
            case .duplicated(let seed): "in order with duplicates \(seed)"
            }
        }

        var isInOrder: Bool { if case .duplicated = self { true } else { false } }

        func indexes(_ count: Int) -> [Int] {
            switch self {
            case .reversed: return Array((0..<count).reversed())
            case .shuffled(let seed):
                var rng = SplitMix64(seed: seed)
                return Array(0..<count).shuffled(using: &rng)
            case .duplicated(let seed):
                // Every delivery again somewhere after it, as Apple retries.
                var rng = SplitMix64(seed: seed)
                var order = Array(0..<count)
                for index in 0..<count { order.insert(index, at: Int.random(in: (order.firstIndex(of: index)! + 1)...order.count, using: &rng)) }
                return order
            }
        }
    }

    /// Events a fact announces but no later fact dates: a change of auto-renew or a price increase
    /// that reached the server first through a later fact (the one announcing it still on its way)
    /// is dated, and an auto-renew change identified, by that later fact (docs/openapi.yaml,
    /// `/v1/events`). The one announcing it still adds its own event when it comes: none is lost.
    static let datedByTheirFact: Set<String> = [
        "subscription.auto_renew_enabled", "subscription.auto_renew_disabled", "subscription.price_increase",
    ]

    /// The outbox in the order events happened (ties by id): the order every delivery order ends in.
    static func happened(_ outcome: RecordedDeliveries.Outcome, excluding: Set<String> = []) -> [String] {
        outcome.events.filter { !excluding.contains($0.type) }.sorted { ($0.occurredAt, $0.id) < ($1.occurredAt, $1.id) }
            .map(\.orderIndependent)
    }

    @Test(arguments: Scenario.names, EventOrderBackend.all)
    func inOrder(_ name: String, backend: EventOrderBackend) async throws {
        let (_, outcome) = try await References.shared.reference(name, backend)
        #expect(!outcome.events.isEmpty)
        #expect(Set(outcome.events.map(\.id)).count == outcome.events.count)
        #expect(outcome.addedByRebuild == 0)
        // In order, commit order is the order things happened.
        #expect(outcome.events.map(\.occurredAt) == outcome.events.map(\.occurredAt).sorted())
    }

    @Test(arguments: Scenario.names, Order.all)
    func otherOrders(_ name: String, order: Order) async throws {
        for backend in EventOrderBackend.all {
            let (recorded, reference) = try await References.shared.reference(name, backend)
            let outcome = try await recorded.deliver(order: order.indexes(recorded.deliveries.count), backend: backend)
            // Duplicates of an in-order delivery: the very same list. Other orders: the same list but
            // for the events a later fact may date; of those, every in-order one is there too.
            let excluded = order.isInOrder ? [] : Self.datedByTheirFact
            let (expected, got) = (Self.happened(reference, excluding: excluded), Self.happened(outcome, excluding: excluded))
            #expect(got == expected, "\(name) \(order.testDescription) on \(backend): \(Self.difference(expected, got))")
            let ids = Dictionary(outcome.events.map { ($0.id, $0.type) }, uniquingKeysWith: { a, _ in a })
            for event in reference.events where excluded.contains(event.type) {
                #expect(ids[event.id] == event.type, "\(name) \(order.testDescription) on \(backend): \(event.type) \(event.id) lost")
            }
            #expect(Set(outcome.events.map(\.id)).count == outcome.events.count)
            #expect(outcome.addedByRebuild == 0)
        }
    }

    static func difference(_ expected: [String], _ got: [String]) -> String {
        let missing = expected.filter { !got.contains($0) }
        let extra = got.filter { !expected.contains($0) }
        return "missing \(missing), extra \(extra)"
    }
}
