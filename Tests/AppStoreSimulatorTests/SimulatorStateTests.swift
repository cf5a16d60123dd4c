import AppStore
import AppStoreSimulator
import Foundation
import Testing

/// A saved ``SimulatorState`` continues the store: same customers and subscriptions, the clock
/// where it was, and ids that go on instead of starting over (so that `entitled dev` can restart).
@Suite struct SimulatorStateTests {
    @Test func aRestoredSimulatorContinuesTimeAndIdsWhereTheSavedOneStopped() async throws {
        let first = try await Harness()
        _ = try await first.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        _ = try await first.perform("purchase") {
            $0.customer = "bob"
            $0.product = "noads"
        }
        _ = try await first.advance("P40D")
        let saved = await first.simulator.savedState()
        // Through JSON, as `entitled dev` keeps it.
        let decoded = try JSONDecoder().decode(SimulatorState.self, from: JSONEncoder().encode(saved))
        #expect(decoded == saved)

        let second = try await Harness(customers: false)
        try await second.simulator.restore(decoded)
        #expect(second.simulator.now == saved.now)
        #expect(await second.simulator.savedState() == saved)
        let renewed = try await second.advance("P1M")
        let bought = try await second.perform("purchase") {
            $0.customer = "bob"
            $0.product = "pro.yearly"
        }
        let newIds = (renewed + bought).compactMap { $0.transaction?.transactionId }
        #expect(!newIds.isEmpty)
        #expect(Set(newIds).isDisjoint(with: saved.transactionIds))
        #expect(saved.customerIds == ["alice", "bob"])
    }

    @Test func aStateOfAnotherVersionIsRefused() async throws {
        let harness = try await Harness()
        var saved = await harness.simulator.savedState()
        saved.version += 1
        await #expect(throws: SimulatorError.self) { try await harness.simulator.restore(saved) }
    }
}
