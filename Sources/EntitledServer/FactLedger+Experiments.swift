import Entitlements
import Storage

/// Experiments' enrolments and what their results read (``ExperimentStore``).
extension FactLedger {
    /// The enrolments of the customer `appUserId` belongs to.
    public func enrolments(appUserId: String) async throws(StorageError) -> [ExperimentEnrolment] {
        try await mapped { try await store.enrolments(appUserId: appUserId) }
    }

    /// Records `enrolment` unless the customer is enrolled in its experiment already; the stored
    /// enrolment and whether this call recorded it (and appended its `experiment.enrolled` event).
    public func enrol(appUserId: String, _ enrolment: ExperimentEnrolment, now: Int64) async throws(StorageError)
        -> (enrolment: ExperimentEnrolment, recorded: Bool)?
    {
        let result = try await mapped { try await store.enrol(appUserId: appUserId, enrolment, now: now) }
        if result?.recorded == true { events.ring() }  // an `experiment.enrolled` event committed
        return result
    }

    /// A page of the experiment's enrolled customers (``ExperimentStore/enrolledCustomers(experimentId:afterCustomerId:limit:)``).
    public func enrolledCustomers(experimentId: String, afterCustomerId: Int64, limit: Int) async throws(StorageError) -> [EnrolledCustomer] {
        try await mapped { try await store.enrolledCustomers(experimentId: experimentId, afterCustomerId: afterCustomerId, limit: limit) }
    }

    /// The engine facts of the customer `appUserId` belongs to (one that no longer decodes is left out).
    public func engineFacts(appUserId: String) async throws(StorageError) -> [Fact] {
        try await mapped { try await store.facts(appUserId: appUserId, projector: projector).compactMap(\.fact) }
    }
}
