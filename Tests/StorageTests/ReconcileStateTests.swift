import Foundation
import Testing

@testable import Storage

/// The reconciliation watermark and lease (`reconcile_state`) on every backend.
@Suite struct ReconcileStateTests {
    let key = ReconcileKey(bundleId: "com.example.app", environment: "Production")

    func reconcileState(_ store: any LedgerStore) throws -> any ReconcileStateStore {
        store
    }

    @Test("one owner holds the lease until it releases it or it expires", arguments: Backend.all)
    func leaseIsExclusive(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let state = try reconcileState(store)
            #expect(try await state.acquireReconcileLease(key, owner: "a", now: 1000, expiresAt: 2000) == .acquired(watermark: nil))
            #expect(try await state.acquireReconcileLease(key, owner: "b", now: 1500, expiresAt: 2500) == .held)
            // The holder renews.
            #expect(try await state.acquireReconcileLease(key, owner: "a", now: 1600, expiresAt: 3000) == .acquired(watermark: nil))
            #expect(try await state.acquireReconcileLease(key, owner: "b", now: 2999, expiresAt: 4000) == .held)
            // Expired: another process takes it, and the old holder can no longer move the watermark.
            #expect(try await state.acquireReconcileLease(key, owner: "b", now: 3000, expiresAt: 4000) == .acquired(watermark: nil))
            #expect(try await state.advanceReconcileWatermark(key, owner: "a", to: 900, now: 3001) == false)
            #expect(try await state.advanceReconcileWatermark(key, owner: "b", to: 900, now: 3001))
            try await state.releaseReconcileLease(key, owner: "b")
            #expect(try await state.acquireReconcileLease(key, owner: "a", now: 3002, expiresAt: 5000) == .acquired(watermark: 900))
            // Another app or environment has its own row.
            let sandbox = ReconcileKey(bundleId: key.bundleId, environment: "Sandbox")
            #expect(try await state.acquireReconcileLease(sandbox, owner: "b", now: 3003, expiresAt: 5000) == .acquired(watermark: nil))
        }
    }

    @Test("the watermark never moves backwards", arguments: Backend.all)
    func watermarkOnlyMovesForward(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let state = try reconcileState(store)
            _ = try await state.acquireReconcileLease(key, owner: "a", now: 0, expiresAt: 10_000)
            #expect(try await state.advanceReconcileWatermark(key, owner: "a", to: 5000, now: 1))
            #expect(try await state.advanceReconcileWatermark(key, owner: "a", to: 4000, now: 2))
            #expect(try await state.acquireReconcileLease(key, owner: "a", now: 3, expiresAt: 10_000) == .acquired(watermark: 5000))
        }
    }

    @Test("concurrent owners: exactly one gets the lease", arguments: Backend.durable)
    func concurrentAcquire(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let state = try reconcileState(store)
            let key = self.key
            let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                for owner in 0..<8 {
                    group.addTask { try await state.acquireReconcileLease(key, owner: "o\(owner)", now: 100, expiresAt: 200) != .held }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(winners == 1)
        }
    }
}
