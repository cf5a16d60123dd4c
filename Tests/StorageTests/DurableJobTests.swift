import Foundation
import Testing

@testable import Storage

/// Durable jobs (`jobs`) on every backend: created once, leased to one process, retried, listed.
@Suite struct DurableJobTests {
    func jobStore(_ store: any LedgerStore) throws -> any DurableJobStore {
        store
    }

    @Test("a job is created once per kind and key, and leased to one owner at a time", arguments: Backend.all)
    func createdOnceAndLeased(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let jobs = try jobStore(store)
            #expect(try await jobs.enqueueJob(kind: "backfill", key: "app:1", bundleId: "app", subject: "1", now: 100, unlessFactsOf: nil))
            #expect(try await !jobs.enqueueJob(kind: "backfill", key: "app:1", bundleId: "app", subject: "1", now: 150, unlessFactsOf: nil))
            #expect(try await jobs.claimJob(owner: "a", now: 99, leaseUntil: 1000) == nil, "not due yet")
            let claimed = try #require(try await jobs.claimJob(owner: "a", now: 200, leaseUntil: 1000))
            #expect(claimed.status == .running && claimed.attempts == 1 && claimed.subject == "1")
            #expect(try await jobs.claimJob(owner: "b", now: 300, leaseUntil: 1300) == nil, "leased to a")
            // a dies; once its lease expires b takes the job over, and a can no longer finish it.
            let taken = try #require(try await jobs.claimJob(owner: "b", now: 1000, leaseUntil: 2000))
            #expect(taken.id == claimed.id && taken.attempts == 2)
            #expect(try await !jobs.finishJob(claimed.id, owner: "a", outcome: .done, now: 1001))
            #expect(try await jobs.finishJob(taken.id, owner: "b", outcome: .retry(at: 5000, error: "APPLE_UNAVAILABLE"), now: 1001))
            #expect(try await jobs.claimJob(owner: "b", now: 4999, leaseUntil: 6000) == nil, "backing off")
            let retried = try #require(try await jobs.claimJob(owner: "b", now: 5000, leaseUntil: 6000))
            #expect(retried.attempts == 3 && retried.lastError == "APPLE_UNAVAILABLE")
            #expect(try await jobs.finishJob(retried.id, owner: "b", outcome: .done, now: 5001))
            #expect(try await jobs.claimJob(owner: "b", now: 99_999, leaseUntil: 100_000) == nil)
            #expect(try await jobs.jobs(status: .done, limit: 10).map(\.id) == [claimed.id])
            #expect(try await jobs.jobs(status: .pending, limit: 10).isEmpty)
        }
    }

    @Test("a backfill is not created for a subscription the ledger has facts of", arguments: Backend.all)
    func notForKnownSubscriptions(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let jobs = try jobStore(store)
            let fact = Fixture.transaction(otid: "known", tid: "known", expires: testNow + day, signed: testNow)
            _ = try await store.ingest(Fixture.batch(facts: [fact]), projector: testProjector, now: testNow)
            #expect(try await !jobs.enqueueJob(kind: "backfill", key: "app:known", bundleId: "app", subject: "known", now: 2, unlessFactsOf: "known"))
            #expect(try await jobs.enqueueJob(kind: "backfill", key: "app:new", bundleId: "app", subject: "new", now: 2, unlessFactsOf: "new"))
            #expect(try await jobs.jobs(status: nil, limit: 10).map(\.subject) == ["new"])
        }
    }

    @Test("concurrent claimers: each due job goes to exactly one", arguments: Backend.durable)
    func concurrentClaims(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let jobs = try jobStore(store)
            for index in 0..<3 {
                _ = try await jobs.enqueueJob(kind: "k", key: "\(index)", bundleId: "app", subject: "\(index)", now: 0, unlessFactsOf: nil)
            }
            let claimed = try await withThrowingTaskGroup(of: Int64?.self) { group in
                for owner in 0..<8 {
                    group.addTask { try await jobs.claimJob(owner: "o\(owner)", now: 10, leaseUntil: 1000)?.id }
                }
                return try await group.reduce(into: [Int64]()) { if let id = $1 { $0.append(id) } }
            }
            #expect(claimed.count == 3 && Set(claimed).count == 3)
        }
    }

    @Test("jobs are counted by kind, subject time and whether they are done", arguments: Backend.all)
    func countedBySubjectTime(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let jobs = try jobStore(store)
            for (key, time) in [("early", 99), ("first", 100), ("middle", 150), ("last", 199), ("late", 200)] as [(String, Int64)] {
                #expect(try await jobs.enqueueJob(kind: "ack", key: key, bundleId: "app", subject: key, subjectTime: time, now: 0, unlessFactsOf: nil))
            }
            _ = try await jobs.enqueueJob(kind: "ack", key: "untimed", bundleId: "app", subject: "untimed", now: 0, unlessFactsOf: nil)
            _ = try await jobs.enqueueJob(kind: "other", key: "o", bundleId: "app", subject: "o", subjectTime: 150, now: 0, unlessFactsOf: nil)
            #expect(try await jobs.unfinishedJobCount(kind: "ack", subjectTimes: 100..<200) == 3)
            #expect(try await jobs.unfinishedJobCount(kind: "other", subjectTimes: 100..<200) == 1)
            #expect(try await jobs.unfinishedJobCount(kind: "ack", subjectTimes: 0..<99) == 0)
            #expect(try await jobs.jobs(status: nil, limit: 10).first { $0.key == "middle" }?.subjectTime == 150)
            // Running and failed jobs count; done ones do not.
            var finished: [String: DurableJobOutcome] = ["first": .done, "middle": .failed(error: "gone")]
            while let job = try await jobs.claimJob(owner: "a", now: 1, leaseUntil: 1000) {
                if let outcome = finished.removeValue(forKey: job.key) { #expect(try await jobs.finishJob(job.id, owner: "a", outcome: outcome, now: 2)) }
            }
            #expect(try await jobs.unfinishedJobCount(kind: "ack", subjectTimes: 100..<200) == 2)
        }
    }

    @Test("version 31 dates the unfinished acknowledgement jobs stored before from their subjects", arguments: Backend.all)
    func acknowledgementJobsDatedFromTheirSubjects(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let jobs = try jobStore(store)
            for (key, subject) in [("s", "subscription 1700000000000 monthly token-s"), ("p", "product 1700000000001 coins token-p"), ("odd", "product soon coins token")] {
                _ = try await jobs.enqueueJob(kind: "playAcknowledge", key: key, bundleId: "app", subject: subject, now: 0, unlessFactsOf: nil)
            }
            _ = try await jobs.enqueueJob(kind: "backfill", key: "b", bundleId: "app", subject: "subscription 1 x y", now: 0, unlessFactsOf: nil)
            let sessions = try #require(store as? any SessionBackedStore)
            try await sessions.write { try Schema.dateAcknowledgementJobs($0) }
            let times = Dictionary(uniqueKeysWithValues: try await jobs.jobs(status: nil, limit: 10).map { ($0.key, $0.subjectTime) })
            #expect(times == ["s": 1_700_000_000_000, "p": 1_700_000_000_001, "odd": nil, "b": nil])
        }
    }

    @Test("consent is recorded, replaced and read back", arguments: Backend.all)
    func consent(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let consents = store
            #expect(try await consents.consent(appUserId: "alice") == nil)
            try await consents.recordConsent(appUserId: "alice", consented: true, now: 1)
            #expect(try await consents.consent(appUserId: "alice") == true)
            try await consents.recordConsent(appUserId: "alice", consented: false, now: 2)
            #expect(try await consents.consent(appUserId: "alice") == false)
        }
    }
}
