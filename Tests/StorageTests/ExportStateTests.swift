import Entitlements
import Foundation
import Testing

@testable import Storage

/// Scheduled exports' bookkeeping (`export_state`) and table readers on every backend.
@Suite struct ExportStateTests {
    let name = "file:///srv/exports"

    @Test("a run is claimed once per interval; a failed run keeps its window; only the holder commits", arguments: Backend.all)
    func claimCommitAndRetry(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            // Never run: due at once, the window from the beginning.
            let first = try #require(try await store.claimExport(name, owner: "a", now: 1000, leaseUntil: 5000, through: 900))
            #expect(first == ExportClaim(after: nil, through: 900, failures: 0))
            // Held: nobody else gets it, and the expired holder's commit is refused once another took it.
            #expect(try await store.claimExport(name, owner: "b", now: 1001, leaseUntil: 5001, through: 901) == nil)
            #expect(try await store.finishExport(name, owner: "b", outcome: .committed(nextRunAt: 9000), now: 1002) == false)
            // The run fails: the window is kept for the retry, even when the retry's own end is later.
            #expect(try await store.finishExport(name, owner: "a", outcome: .failed(retryAt: 2000, error: "EXPORT_UNAVAILABLE"), now: 1500))
            #expect(try await store.claimExport(name, owner: "b", now: 1999, leaseUntil: 6000, through: 1800) == nil)
            let retry = try #require(try await store.claimExport(name, owner: "b", now: 2000, leaseUntil: 6000, through: 1900))
            #expect(retry == ExportClaim(after: nil, through: 900, failures: 1))
            #expect(try await store.renewExportLease(name, owner: "b", now: 2100, leaseUntil: 7000))
            #expect(try await store.renewExportLease(name, owner: "a", now: 2100, leaseUntil: 7000) == false)
            #expect(try await store.finishExport(name, owner: "b", outcome: .committed(nextRunAt: 10_000), now: 2200))
            // Committed: the watermark is the window's end; not due again before the interval.
            #expect(try await store.claimExport(name, owner: "a", now: 9999, leaseUntil: 20_000, through: 9000) == nil)
            let next = try #require(try await store.claimExport(name, owner: "a", now: 10_000, leaseUntil: 20_000, through: 9500))
            #expect(next == ExportClaim(after: 900, through: 9500, failures: 0))
            let status = try #require(try await store.exportStatuses(now: 10_001).first)
            #expect(status.export == name && status.watermark == 900 && status.lastSuccessAt == 2200 && status.running && status.lastError == nil)
            // A lease that expires (the process died) lets another process redo the run.
            let taken = try #require(try await store.claimExport(name, owner: "c", now: 20_000, leaseUntil: 30_000, through: 19_000))
            #expect(taken == ExportClaim(after: 900, through: 9500, failures: 0))
        }
    }

    @Test("concurrent claimers: exactly one runs the export", arguments: Backend.durable)
    func concurrentClaims(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let name = self.name
            let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                for owner in 0..<8 {
                    group.addTask { try await store.claimExport(name, owner: "o\(owner)", now: 100, leaseUntil: 200, through: 50) != nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(winners == 1)
        }
    }

    @Test("the readers page through the rows changed in a window", arguments: Backend.all)
    func readersPageThroughAWindow(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            // Five customers at testNow, two more an hour later.
            for index in 0..<7 {
                let at = index < 5 ? testNow : testNow + 3_600_000
                let token = UUID().uuidString.lowercased()
                _ = try await store.ensureCustomer(appUserId: "u\(index)", appAccountToken: token, projector: testProjector, now: at)
                let batch = Fixture.batch(
                    facts: [Fixture.transaction(otid: "o\(index)", tid: "t\(index)", expires: at + 30 * day, signed: at - 1000, token: token)],
                    source: .client, receivedAt: at, claim: Claim(appUserId: "u\(index)"))
                _ = try await store.ingest(batch, projector: testProjector, now: at)
            }
            let early = ExportWindow(after: nil, through: testNow)
            let late = ExportWindow(after: testNow, through: testNow + 3_600_000)

            var customers: [ExportedCustomer] = []
            var after = Int64.min
            while true {
                let page = try await store.exportCustomers(early, afterID: after, limit: 2)
                customers += page
                guard page.count == 2 else { break }
                after = page.last!.id
            }
            #expect(customers.map(\.appUserId) == ["u0", "u1", "u2", "u3", "u4"])
            #expect(customers.allSatisfy { $0.activeEntitlements == ["pro"] && !$0.projectionFailed })
            #expect(try await store.exportCustomers(late, afterID: .min, limit: 10).map(\.appUserId) == ["u5", "u6"])

            let subscriptions = try await store.exportSubscriptions(late, after: "", limit: 10)
            #expect(subscriptions.map(\.owned.subscription.originalTransactionId) == ["o5", "o6"])
            #expect(subscriptions.map(\.owned.appUserId) == ["u5", "u6"])
            #expect(try await store.exportSubscriptions(early, after: "o3", limit: 10).map(\.owned.appUserId) == ["u4"])

            let transactions = try await store.exportTransactions(early, afterID: .min, limit: 3, projector: testProjector)
            #expect(transactions.map(\.fact.transactionId) == ["t0", "t1", "t2"])
            #expect(transactions.map(\.appUserId) == ["u0", "u1", "u2"])
            let rest = try await store.exportTransactions(early, afterID: transactions.last!.id, limit: 3, projector: testProjector)
            #expect(rest.map(\.fact.transactionId) == ["t3", "t4"])
            #expect(try await store.exportTransactions(late, afterID: .min, limit: 10, projector: testProjector).map(\.receivedAt) == [
                testNow + 3_600_000, testNow + 3_600_000,
            ])

            let events = try await store.exportEvents(late, afterSequence: .min, limit: 10)
            #expect(!events.isEmpty && events.allSatisfy { $0.recordedAt == testNow + 3_600_000 })
            #expect(Set(events.compactMap(\.appUserId)) == ["u5", "u6"])
            #expect(try await store.exportEvents(ExportWindow(after: testNow + 3_600_000, through: testNow + 7_200_000), afterSequence: .min, limit: 10).isEmpty)
        }
    }
}
