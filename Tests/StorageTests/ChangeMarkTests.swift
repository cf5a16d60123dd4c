import Entitlements
import Foundation
import Testing

@testable import Storage

/// ``LedgerStore/changeMarkNow()``: equal marks mean nothing was committed between them, by the
/// store itself or by any other connection to its database.
@Suite("The change mark moves with every commit")
struct ChangeMarkTests {
    @Test("reads keep the mark; this store's commits and another connection's move it", arguments: Backend.all)
    func marks(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            func mark() throws -> Int64? { if case .done(let mark) = try store.changeMarkNow() { mark } else { nil } }
            guard backend == .sqliteFile else {
                // PostgreSQL (other servers write it) and SQLite in memory give none.
                #expect(try mark() == nil)
                return
            }
            let first = try #require(try mark())
            _ = try await store.projection(appUserId: "nobody")
            if case .done = try store.stateNow(appUserId: "nobody") {}
            #expect(try mark() == first)

            _ = try await store.ensureCustomer(appUserId: "ana", appAccountToken: nil, projector: testProjector, now: testNow)
            let second = try #require(try mark())
            #expect(second != first)
            #expect(try mark() == second)

            // Another connection to the same file, as another process (`entitled import`) is.
            let other = try await database.open()
            let third: Int64
            do {
                let before = try #require(try mark())
                _ = try await other.ensureCustomer(appUserId: "bo", appAccountToken: nil, projector: testProjector, now: testNow)
                third = try #require(try mark())
                #expect(third != before)
                try await other.raw("UPDATE customer_states SET projection_error = 'x' WHERE app_user_id = 'bo'")
                #expect(try mark() != third)
            } catch {
                await other.close()
                throw error
            }
            await other.close()
            try await store.raw("UPDATE customer_states SET projection_error = NULL WHERE app_user_id = 'bo'")
        }
    }

    @Test("a closed store gives no mark")
    func closed() async throws {
        let database = try TestDatabase(.sqliteFile)
        let store = try await database.open()
        #expect(try { if case .done = try store.changeMarkNow() { true } else { false } }())
        await store.close()
        #expect(try { if case .wouldWait = try store.changeMarkNow() { true } else { false } }())
        await database.destroy()
    }
}
