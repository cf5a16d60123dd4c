import AppStore
import Entitlements
import Storage

/// Keeps every retention request and its choice (``Storage/RetentionLog``) without making Apple
/// wait for a write: a request's record is queued in memory and the queue is written in one
/// transaction at most ``delay`` later. At most ``maxPending`` records wait; beyond that, records
/// are dropped and counted (storage down for long) rather than memory growing without bound.
actor RetentionRecorder {
    let log: any RetentionLog
    let delay: Duration
    let maxPending: Int
    private var pending: [RetentionRequestRecord] = []
    private var scheduled = false
    /// Records dropped because the queue was full.
    private(set) var dropped = 0

    init(log: any RetentionLog, delay: Duration = .milliseconds(100), maxPending: Int = 10_000) {
        self.log = log
        self.delay = delay
        self.maxPending = maxPending
    }

    /// Queues `record`; the write follows within ``delay``.
    func add(_ record: RetentionRequestRecord) {
        guard pending.count < maxPending else {
            dropped += 1
            return
        }
        pending.append(record)
        schedule()
    }

    /// Writes what is queued now. A failed write puts the records back (bounded) and tries again later.
    func flush() async {
        scheduled = false
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        do {
            try await log.recordRetentionRequests(batch)
        } catch {
            ServerLog.event("retention requests not recorded yet", ["count": "\(batch.count)", "error": "\(error)"], level: .error)
            let room = max(0, maxPending - pending.count)
            dropped += max(0, batch.count - room)
            pending.insert(contentsOf: batch.prefix(room), at: 0)
            schedule(after: .seconds(1))
        }
    }

    private func schedule(after wait: Duration? = nil) {
        guard !scheduled else { return }
        scheduled = true
        let delay = wait ?? self.delay
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.flush()
        }
    }
}

/// Attributes each recorded request's later fate (``Entitlements/RetentionOutcome``) and reports
/// the save rate per rule. Undecided requests are checked a batch at a time, least recently
/// checked first, each from its subscription's facts.
struct RetentionSaveRates: Sendable {
    let log: any RetentionLog
    let ledger: FactLedger
    let policy: Policy

    /// Requests checked per call of ``attribute(now:limit:)``.
    static let batch = 500

    /// Decides what it can among up to `limit` undecided requests; returns how many it decided.
    @discardableResult
    func attribute(now: Int64, limit: Int = batch) async throws -> Int {
        let undecided = try await log.undecidedRetentionRequests(requestedBefore: now, limit: limit)
        var facts: [String: [Fact]] = [:]
        var decisions: [(id: Int64, outcome: String?)] = []
        for record in undecided {
            guard let id = record.id else { continue }
            if facts[record.originalTransactionId] == nil {
                facts[record.originalTransactionId] =
                    try await ledger.subscriptionFacts(originalTransactionId: record.originalTransactionId)
            }
            let outcome = RetentionOutcome.of(
                facts: facts[record.originalTransactionId] ?? [], originalTransactionId: record.originalTransactionId,
                requestedAt: record.requestedAt, policy: policy, now: now, environment: Environment(rawValue: record.environment))
            decisions.append((id, outcome?.rawValue))
        }
        try await log.decideRetentionRequests(decisions, checkedAt: now)
        return decisions.filter { $0.outcome != nil }.count
    }

    /// Per app and rule, the requests since `since`: how many renewed, expired, are undecided, and
    /// the save rate (renewed over decided; nil before any is decided).
    func report(since: Int64, now: Int64) async throws -> [RetentionRuleReport] {
        try await attribute(now: now)
        return try await log.retentionRuleCounts(since: since).map(RetentionRuleReport.init)
    }
}

/// One rule's line of the save-rate report (`GET /v1/retention/save-rates`).
struct RetentionRuleReport: Encodable, Equatable {
    var bundleId: String
    var ruleId: String
    var requests: Int
    var renewed: Int
    var expired: Int
    var undecided: Int
    var saveRate: Double?

    init(_ counts: RetentionRuleCounts) {
        bundleId = counts.bundleId
        ruleId = counts.ruleId
        requests = counts.requests
        renewed = counts.renewed
        expired = counts.expired
        undecided = counts.requests - counts.renewed - counts.expired
        let decided = counts.renewed + counts.expired
        saveRate = decided == 0 ? nil : Double(counts.renewed) / Double(decided)
    }

    private enum CodingKeys: String, CodingKey {
        case bundleId, ruleId, requests, renewed, expired, undecided, saveRate
    }

    /// Every member, `saveRate` as null before any request is decided.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(ruleId, forKey: .ruleId)
        try container.encode(requests, forKey: .requests)
        try container.encode(renewed, forKey: .renewed)
        try container.encode(expired, forKey: .expired)
        try container.encode(undecided, forKey: .undecided)
        try container.encode(saveRate, forKey: .saveRate)
    }
}
