import Entitlements
import Foundation
import Testing

@testable import Storage

/// Experiments (versioned with the offerings) and enrolments (`experiment_enrolments`) on every
/// backend.
@Suite struct ExperimentStoreTests {
    @Test("an experiment's change is a new version of the offerings", arguments: Backend.all)
    func experimentsAreVersioned(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let first = try await store.changePaywall(actor: "admin", now: 10) { _ in [.putExperiment(id: "spring", document: "{}")] }
            #expect(first.version == 1)
            #expect(first.experiments == [StoredExperiment(id: "spring", document: "{}", version: 1, updatedAt: 10)])
            let second = try await store.changePaywall(actor: "admin", now: 20) { _ in [.putExperiment(id: "spring", document: #"{"a":1}"#)] }
            #expect(second.experiments == [StoredExperiment(id: "spring", document: #"{"a":1}"#, version: 2, updatedAt: 20)])
            #expect(try await store.paywall() == second)
            #expect(try await store.count("SELECT COUNT(*) FROM paywall_changes WHERE kind = 'experiment' AND subject = 'spring'") == 2)
        }
    }

    @Test("an enrolment is recorded once per customer and experiment, with one event; the first one stays", arguments: Backend.all)
    func enrolmentIsRecordedOnce(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let enrolment = ExperimentEnrolment(experimentId: "spring", variant: 1, offeringId: "cheap", enrolledAt: 100)
            #expect(try await store.enrol(appUserId: "ana", enrolment, now: 100) == nil)
            for id in ["ana", "bob"] {
                _ = try await store.ensureCustomer(appUserId: id, appAccountToken: nil, projector: testProjector, now: testNow)
            }
            #expect(try await store.enrolments(appUserId: "ana") == [])
            let first = try #require(try await store.enrol(appUserId: "ana", enrolment, now: 100))
            #expect(first.enrolment == enrolment && first.recorded)
            // Another server, a moment later, with another variant (weights changed): the first stays.
            let other = ExperimentEnrolment(experimentId: "spring", variant: 0, offeringId: "default", enrolledAt: 200)
            let second = try #require(try await store.enrol(appUserId: "ana", other, now: 200))
            #expect(second.enrolment == enrolment && !second.recorded)
            // Concurrent first exposures of one customer: one enrolment, one event.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for k in 0..<6 {
                    group.addTask {
                        let e = ExperimentEnrolment(experimentId: "summer", variant: k % 2, offeringId: "o\(k % 2)", enrolledAt: 300 + Int64(k))
                        _ = try await store.enrol(appUserId: "bob", e, now: 300 + Int64(k))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.enrolments(appUserId: "bob").count == 1)
            let events = try await store.events(after: 0, limit: 100).filter { $0.type == "experiment.enrolled" }
            #expect(events.count == 2)
            let ana = try #require(events.first { $0.appUserId == "ana" })
            #expect(ana.details == ["experimentId": "spring", "variant": "1", "offeringId": "cheap"])
            #expect(ana.occurredAt == 100)
            #expect(try await store.enrolments(appUserId: "ana") == [enrolment])
        }
    }

    @Test("enrolled customers are read in pages; an alias reads its customer's enrolments; erasure removes them", arguments: Backend.all)
    func enrolledCustomersPagesAliasesAndErasure(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            for k in 0..<5 {
                _ = try await store.ensureCustomer(appUserId: "c\(k)", appAccountToken: nil, projector: testProjector, now: testNow)
                _ = try await store.enrol(
                    appUserId: "c\(k)", ExperimentEnrolment(experimentId: "spring", variant: k % 2, offeringId: "o\(k % 2)", enrolledAt: Int64(k)),
                    now: Int64(k))
            }
            let page1 = try await store.enrolledCustomers(experimentId: "spring", afterCustomerId: 0, limit: 3)
            #expect(page1.map(\.appUserId) == ["c0", "c1", "c2"])
            #expect(page1.map(\.variant) == [0, 1, 0])
            let page2 = try await store.enrolledCustomers(experimentId: "spring", afterCustomerId: page1.last!.customerId, limit: 3)
            #expect(page2.map(\.appUserId) == ["c3", "c4"])
            #expect(try await store.enrolledCustomers(experimentId: "other", afterCustomerId: 0, limit: 3).isEmpty)
            _ = try await store.directory.addAlias("c1-phone", to: "c1", actor: nil, projector: testProjector, now: testNow)
            #expect(try await store.enrolments(appUserId: "c1-phone").map(\.offeringId) == ["o1"])
            _ = try await store.directory.eraseCustomer(appUserId: "c1", actor: nil, now: testNow)
            #expect(try await store.count("SELECT COUNT(*) FROM experiment_enrolments") == 4)
            #expect(try await store.enrolledCustomers(experimentId: "spring", afterCustomerId: 0, limit: 10).map(\.appUserId) == ["c0", "c2", "c3", "c4"])
        }
    }
}
