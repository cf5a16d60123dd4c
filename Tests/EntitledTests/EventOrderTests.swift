import AppStoreTesting
import Entitlements
import Foundation
import Storage
import Testing

/// The simulator's lifecycles (the scenario files) delivered in order, reversed, shuffled and
/// duplicated, on SQLite and PostgreSQL: with events held until the customer's history settles
/// (``EventHold``), the outbox ends with the same events — every field but `sequence` and
/// `recordedAt`, causes and answers included (``OutboxEvent/orderIndependent(answer:)``) — each once, and a
/// rebuild adds none. In order (with or without duplicates) holds are released as time goes by,
/// before each delivery; the disordered runs come within one settle window, released at the end.
/// Two answers are not compared: those of events appended at their message's commit
/// (``OutboxEvent/immediateTypes``), and in V1 scenarios, whose renewal info carries no date of
/// its own (it takes its receipt's newest purchase, so a later V1 message's renewal info joins an
/// instant already released in order; docs/storage.md).
@Suite struct EventOrderTests {
    /// Each scenario recorded once and its in-order run, shared by the other orders. Tasks, so
    /// that tests asking at once (the actor is reentrant across the awaits) share one recording:
    /// a second one would have other notification UUIDs, which events cite.
    actor References {
        static let shared = References()
        private var recordings: [String: Task<RecordedDeliveries, any Error>] = [:]
        private var outcomes: [String: Task<RecordedDeliveries.Outcome, any Error>] = [:]

        func reference(_ name: String, _ backend: EventOrderBackend) async throws -> (RecordedDeliveries, RecordedDeliveries.Outcome) {
            let recording = recordings[name] ?? Task { try await RecordedDeliveries.record(try Scenario.load(name)) }
            recordings[name] = recording
            let key = "\(name) \(backend.rawValue)"
            let outcome =
                outcomes[key] ?? Task {
                    let recorded = try await recording.value
                    return try await recorded.deliver(order: Array(recorded.deliveries.indices), backend: backend)
                }
            outcomes[key] = outcome
            return (try await recording.value, try await outcome.value)
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

    /// The events a consumer holds, in the order they happened (ties by id): the outbox less its
    /// corrections and the events they supersede — the stream every delivery order ends in. An
    /// unlinked subscription's events (Apple's notification of a family member's purchase came
    /// before their app posted it) are released under nobody only in the orders where nobody had
    /// claimed it yet, and superseded by a correction once the app claims it.
    static func happened(_ outcome: RecordedDeliveries.Outcome, v1: Bool) -> [String] {
        let superseded = Set(
            outcome.events.filter { $0.type == EventType.correction.rawValue }
                .flatMap { ($0.details["supersedes"] ?? "").split(separator: ",").map(String.init) })
        return outcome.events.filter { $0.type != EventType.correction.rawValue && !superseded.contains($0.id) }
            .sorted { ($0.occurredAt, $0.id) < ($1.occurredAt, $1.id) }
            .map { $0.orderIndependent(answer: !v1 && !OutboxEvent.immediateTypes.contains($0.type)) }
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
            let outcome = try await recorded.deliver(
                order: order.indexes(recorded.deliveries.count), backend: backend, releasing: order.isInOrder)
            let (expected, got) = (Self.happened(reference, v1: recorded.v1), Self.happened(outcome, v1: recorded.v1))
            #expect(got == expected, "\(name) \(order.testDescription) on \(backend): \(Self.difference(expected, got))")
            #expect(Set(outcome.events.map(\.id)).count == outcome.events.count)
            #expect(outcome.addedByRebuild == 0)
        }
    }

    /// The events (every field compared) one list has and the other has not, counted.
    static func difference(_ expected: [String], _ got: [String]) -> String {
        let missing = expected.filter { !got.contains($0) }
        let extra = got.filter { !expected.contains($0) }
        return "\(missing.count) missing, \(extra.count) extra: missing \(missing), extra \(extra)"
    }
}
