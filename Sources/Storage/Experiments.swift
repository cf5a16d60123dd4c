import Entitlements

/// An experiment is stored as an offering is: its document (the server's JSON) and the version of
/// its last change, among the offerings' versioned changes (``PaywallChange/putExperiment(id:document:)``).
public typealias StoredExperiment = StoredOffering

/// A customer enrolled in an experiment, for its results.
public struct EnrolledCustomer: Sendable, Hashable {
    /// The customer's row id: the order results are read in.
    public var customerId: Int64
    public var appUserId: String
    public var variant: Int
    public var enrolledAt: Int64

    public init(customerId: Int64, appUserId: String, variant: Int, enrolledAt: Int64) {
        self.customerId = customerId
        self.appUserId = appUserId
        self.variant = variant
        self.enrolledAt = enrolledAt
    }
}

/// Customers' enrolments in experiments (`experiment_enrolments`): one per customer and
/// experiment, whichever server records it first, with an `experiment.enrolled` event in the same
/// transaction. They belong to the customer and go with it at erasure.
public protocol ExperimentStore: Sendable {
    /// The enrolments of the customer `appUserId` belongs to (its aliases' included); empty when
    /// there is no such customer.
    func enrolments(appUserId: String) async throws -> [ExperimentEnrolment]

    /// Records `enrolment` for the customer `appUserId` belongs to unless one in its experiment is
    /// stored (then nothing is written); the stored one and whether this call recorded it. Nil
    /// when there is no such customer.
    func enrol(appUserId: String, _ enrolment: ExperimentEnrolment, now: Int64) async throws -> (enrolment: ExperimentEnrolment, recorded: Bool)?

    /// The experiment's enrolled customers with a row id above `afterCustomerId`, in row-id
    /// order, at most `limit`.
    func enrolledCustomers(experimentId: String, afterCustomerId: Int64, limit: Int) async throws -> [EnrolledCustomer]
}

extension SessionBackedStore {
    func enrolments(appUserId: String) async throws -> [ExperimentEnrolment] {
        try await read(customer: appUserId) { session in
            guard let customer = try Ledger(session: session, fault: nil).customer(appUserId: appUserId) else { return [] }
            return try Self.readEnrolments(session, customerId: customer.id)
        }
    }

    func enrol(appUserId: String, _ enrolment: ExperimentEnrolment, now: Int64) async throws -> (enrolment: ExperimentEnrolment, recorded: Bool)? {
        try await observedWrite { ledger in
            let session = ledger.session
            guard let customer = try ledger.customer(appUserId: appUserId) else { return nil }
            if let stored = try Self.readEnrolments(session, customerId: customer.id).first(where: { $0.experimentId == enrolment.experimentId }) {
                return (stored, false)
            }
            let inserted = try session.query(
                """
                INSERT INTO experiment_enrolments (experiment_id, customer_id, variant, offering_id, enrolled_at)
                VALUES (\(enrolment.experimentId), \(customer.id), \(Int64(enrolment.variant)), \(enrolment.offeringId), \(enrolment.enrolledAt))
                ON CONFLICT (experiment_id, customer_id) DO NOTHING RETURNING customer_id
                """
            ).count
            guard let stored = try Self.readEnrolments(session, customerId: customer.id).first(where: { $0.experimentId == enrolment.experimentId })
            else { return nil }
            if inserted > 0 {
                try ledger.emitCustomerEvent(
                    .experimentEnrolled, customer: customer, key: [enrolment.experimentId],
                    details: ["experimentId": enrolment.experimentId, "variant": String(enrolment.variant), "offeringId": enrolment.offeringId],
                    answer: try ledger.storedState(customerID: customer.id)?.projection.state ?? [], now: now, customerID: customer.id)
            }
            return (stored, inserted > 0)
        }
    }

    func enrolledCustomers(experimentId: String, afterCustomerId: Int64, limit: Int) async throws -> [EnrolledCustomer] {
        try await read { session in
            try session.rows(
                """
                SELECT e.customer_id, c.app_user_id, e.variant, e.enrolled_at FROM experiment_enrolments e
                JOIN customers c ON c.id = e.customer_id
                WHERE e.experiment_id = \(experimentId) AND e.customer_id > \(afterCustomerId)
                ORDER BY e.customer_id LIMIT \(Int64(limit))
                """, as: EnrolledColumns.self
            ).map { EnrolledCustomer(customerId: $0.customerId, appUserId: $0.appUserId, variant: Int($0.variant), enrolledAt: $0.enrolledAt) }
        }
    }

    /// The enrolments of the customer row `customerId` and its aliases, the earliest per experiment.
    static func readEnrolments(_ session: any SQLSession, customerId: Int64) throws -> [ExperimentEnrolment] {
        let rows = try session.rows(
            """
            SELECT experiment_id, variant, offering_id, enrolled_at FROM experiment_enrolments
            WHERE customer_id IN (SELECT id FROM customers WHERE id = \(customerId) OR merged_into = \(customerId))
            ORDER BY enrolled_at, experiment_id
            """, as: EnrolmentColumns.self)
        var seen: Set<String> = []
        return rows.filter { seen.insert($0.experimentId).inserted }.map {
            ExperimentEnrolment(experimentId: $0.experimentId, variant: Int($0.variant), offeringId: $0.offeringId, enrolledAt: $0.enrolledAt)
        }
    }
}

/// An enrolment's columns.
private struct EnrolmentColumns: Decodable {
    var experimentId: String
    var variant: Int64
    var offeringId: String
    var enrolledAt: Int64
}

/// An enrolled customer's columns.
private struct EnrolledColumns: Decodable {
    var customerId: Int64
    var appUserId: String
    var variant: Int64
    var enrolledAt: Int64
}
