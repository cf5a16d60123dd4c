import EntitledCrypto
import Entitlements
import HTTPServer
import Storage

/// Which experiment variant a customer's offering read shows (the engine's
/// ``assignExperiment(experiments:enrolments:appUserId:audience:sha256:)``), recording the
/// customer's enrolment on their first exposure. Knows no request.
struct ExperimentExposure: Sendable {
    let ledger: FactLedger

    /// The variant `appUserId` sees now, enrolling them when this is their first exposure; nil
    /// when no experiment is running or paused (no read then) or none decides for them.
    func assignment(appUserId: String, audience: Audience, paywall: Paywall, now: Int64) async throws -> ExperimentAssignment? {
        let live = paywall.liveExperiments
        guard !live.isEmpty else { return nil }
        let enrolments = try await Problems.store { () async throws(StorageError) in try await ledger.enrolments(appUserId: appUserId) }
        guard
            let assignment = assignExperiment(
                experiments: live, enrolments: enrolments, appUserId: appUserId, audience: audience, sha256: { SHA256.hash($0) })
        else { return nil }
        guard assignment.enrols else { return assignment }
        let enrolment = ExperimentEnrolment(
            experimentId: assignment.experimentId, variant: assignment.variant, offeringId: assignment.offeringId, enrolledAt: now)
        // Another server may have enrolled the customer a moment ago: the stored enrolment counts.
        guard
            let stored = try await Problems.store({ () async throws(StorageError) in
                try await ledger.enrol(appUserId: appUserId, enrolment, now: now)
            })
        else { return assignment }
        return ExperimentAssignment(
            experimentId: stored.enrolment.experimentId, variant: stored.enrolment.variant, offeringId: stored.enrolment.offeringId,
            enrols: stored.recorded)
    }
}

/// An experiment's results (``ExperimentTally``) from the facts of its enrolled customers, read
/// a page at a time. Knows no request.
struct ExperimentResultsReader: Sendable {
    let ledger: FactLedger
    /// The environments counted: those the customers' answers merge.
    let environments: [Environment]
    /// The most enrolled customers read for one answer (beyond them the answer is `partial`).
    static let maxCustomers = 100_000
    static let pageSize = 500

    func results(of entry: Paywall.ExperimentEntry, now: Int64) async throws -> ExperimentResultsBody {
        let experiment = entry.experiment
        var tally = ExperimentTally(variantCount: experiment.variants.count, now: now)
        let counted = Set(environments)
        var after: Int64 = 0
        var read = 0
        var partial = false
        while true {
            let page = try await Problems.store { () async throws(StorageError) in
                try await ledger.enrolledCustomers(experimentId: experiment.id, afterCustomerId: after, limit: Self.pageSize)
            }
            for customer in page {
                guard read < Self.maxCustomers else {
                    partial = true
                    break
                }
                let facts = try await Problems.store { () async throws(StorageError) in try await ledger.engineFacts(appUserId: customer.appUserId) }
                tally.add(variant: customer.variant, enrolledAt: customer.enrolledAt, facts: facts, environments: counted)
                read += 1
            }
            guard let last = page.last, page.count == Self.pageSize, !partial else { break }
            after = last.customerId
        }
        return ExperimentResultsBody(entry: entry, tally: tally, computedAt: now, partial: partial)
    }
}

/// `GET /v1/experiments/{experimentId}/results`' answer.
struct ExperimentResultsBody: Encodable {
    var entry: Paywall.ExperimentEntry
    var tally: ExperimentTally
    var computedAt: Int64
    var partial: Bool

    enum Key: String, CodingKey {
        case experimentId, status, version, computedAt, partial, enoughData, minimumCustomers, horizonDays, method, variants
    }

    struct Variant: Encodable {
        var index: Int
        var offeringId: String
        var weight: Int
        var customers: Int
        var horizons: [Horizon]
    }

    struct Horizon: Encodable {
        var days: Int
        var customers: Int
        var enoughData: Bool
        var trialsStarted: Proportion
        var trialConversions: Proportion
        var paidConversions: Proportion
        var revenuePerCustomer: [Mean]
        var realizedRevenuePerCustomer: [Mean]
    }

    struct Proportion: Encodable {
        var count: Int
        var rate: Double
        var low: Double
        var high: Double
        init(_ p: ProportionEstimate) { (count, rate, low, high) = (p.count, p.rate, p.low, p.high) }
    }

    /// Amounts in the currency's units (Apple's milli-units / 1000).
    struct Mean: Encodable {
        var currency: String
        var total: Double
        var mean: Double
        var low: Double
        var high: Double
        init(_ m: MeanEstimate) { (currency, total, mean, low, high) = (m.currency, Double(m.total) / 1000, m.mean / 1000, m.low / 1000, m.high / 1000) }
    }

    static let method =
        "Customers counted at a horizon: those enrolled at least that many days ago. Proportions per customer with 95 % Wilson score intervals; "
        + "revenue per customer (every counted customer, 0 when they paid nothing) with 95 % normal intervals, mean ± 1.96·s/√n."

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let results = tally.results()
        let variants = entry.experiment.variants.enumerated().map { index, variant in
            Variant(
                index: index, offeringId: variant.offeringId, weight: variant.weight, customers: tally.customers[index],
                horizons: results[index].map { r in
                    Horizon(
                        days: r.days, customers: r.customers, enoughData: r.enoughData, trialsStarted: Proportion(r.trialsStarted),
                        trialConversions: Proportion(r.trialConversions), paidConversions: Proportion(r.paidConversions),
                        revenuePerCustomer: r.revenuePerCustomer.map(Mean.init), realizedRevenuePerCustomer: r.realizedRevenuePerCustomer.map(Mean.init))
                })
        }
        try c.put(entry.experiment.id, .experimentId)
        try c.put(entry.experiment.status, .status)
        try c.put(entry.version, .version)
        try c.date(computedAt, .computedAt)
        try c.put(partial, .partial)
        // Enough data: every variant at the first horizon.
        try c.put(results.allSatisfy { $0.first?.enoughData ?? false }, .enoughData)
        try c.put(ExperimentStatistics.minimumCustomers, .minimumCustomers)
        try c.put(ExperimentStatistics.horizonDays, .horizonDays)
        try c.put(Self.method, .method)
        try c.put(variants, .variants)
    }
}

extension Paywall {
    /// The experiments that can decide a customer's offering now: running or paused, with every
    /// variant's offering present. An experiment whose offering is gone (it cannot be deleted
    /// while the experiment is not ended; a document that no longer decodes) shows nothing.
    var liveExperiments: [Experiment] {
        experiments.filter { experiment in
            experiment.status != .ended && experiment.variants.allSatisfy { offerings[$0.offeringId] != nil }
        }
    }
}
