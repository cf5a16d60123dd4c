import Entitlements
import Testing

/// A server's outbox as ``eventRelease(facts:policy:now:environment:released:revealedFrom:)``
/// fills it: each arrival's facts join the known ones, and what the release says is appended (a
/// correction marks what it supersedes).
struct SimulatedOutbox {
    var known: [Fact] = []
    var released: [ReleasedEvent] = []
    /// Every event appended, corrections as their superseded ids, in release order.
    var log: [(type: EventType, id: String, supersedes: [String])] = []
    var corrections: Int { log.filter { $0.type == .correction }.count }

    mutating func arrive(_ facts: [Fact], at now: Int64) {
        known += facts
        let release = eventRelease(
            facts: known, policy: policy, now: now, environment: .production, released: released,
            revealedFrom: facts.map(\.date).min() ?? .max)
        if !release.superseded.isEmpty {
            log.append((.correction, "correction \(log.count)", release.superseded))
            for index in released.indices where release.superseded.contains(released[index].id) { released[index].superseded = true }
        }
        for addition in release.additions {
            let event = addition.event
            let id = "\(event.identity)#\(addition.revision)"
            log.append((event.type, id, []))
            released.append(
                ReleasedEvent(
                    id: id, type: event.type, occurredAt: event.occurredAt, environment: event.environment,
                    originalTransactionId: event.originalTransactionId, productId: event.productId, entitlements: event.entitlements,
                    details: event.details, superseded: false))
        }
    }

    /// The events a consumer holds once it applied every correction, in the order they happened.
    var net: [String] {
        released.filter { !$0.superseded }.map { event in
            let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            return "\(event.type) @\(event.occurredAt) \(event.subject) [\(details)] \(event.entitlements)"
        }.sorted()
    }

    static func run(_ arrivals: [(facts: [Fact], at: Int64)], end: Int64) -> SimulatedOutbox {
        var outbox = SimulatedOutbox()
        for (facts, at) in arrivals { outbox.arrive(facts, at: at) }
        outbox.arrive([], at: end)
        return outbox
    }
}

@Suite struct CorrectionTests {
    @Test("a renewal signed long after an expiry was released: a correction supersedes the expiry, the renewal follows")
    func lateRenewalCorrectsAnExpiry() {
        let e1 = months(1)
        let first: [Fact] = [tx("t1", purchase: T0, expires: e1), renewal(signed: T0)]
        var outbox = SimulatedOutbox()
        outbox.arrive(first, at: T0)
        // A fact signed after the end decides it: with no renewal known, an expiry.
        outbox.arrive([renewal(signed: e1 + hour)], at: e1 + hour)
        #expect(outbox.log.map(\.type) == [.subscriptionStarted, .subscriptionExpired])
        // Days later the renewal Apple signed at the period end arrives.
        outbox.arrive([tx("t2", purchase: e1, expires: months(2), signed: e1 + 2 * hour)], at: e1 + 3 * day)
        #expect(outbox.log.map(\.type) == [.subscriptionStarted, .subscriptionExpired, .correction, .subscriptionRenewed])
        #expect(outbox.log[2].supersedes == [outbox.log[1].id])
        let all = first + [renewal(signed: e1 + hour), tx("t2", purchase: e1, expires: months(2), signed: e1 + 2 * hour)]
        let truth = eventTimeline(facts: all, policy: policy, now: e1 + 3 * day, environment: .production)
        #expect(outbox.net == said(truth).sorted())
        // The same facts again change nothing.
        outbox.arrive(all, at: e1 + 4 * day)
        #expect(outbox.log.count == 4)
    }

    @Test("an event released with fields hindsight changes is superseded and released again under a new revision")
    func changedDetailsAreCorrected() {
        let e1 = months(1)
        var outbox = SimulatedOutbox()
        outbox.arrive([tx("t1", purchase: T0, expires: e1), renewal(signed: T0)], at: T0)
        outbox.arrive([renewal(retry: true, signed: e1 + hour)], at: e1 + hour)
        #expect(outbox.log.last?.type == .subscriptionBillingIssue)
        let retry = outbox.released.last!
        #expect(retry.details["kind"] == "billingRetry")
        // Renewal info signed earlier, arriving later, says the customer was in a grace period.
        outbox.arrive([renewal(retry: true, grace: e1 + 16 * day, signed: e1 + 30 * 60_000)], at: e1 + 2 * day)
        #expect(outbox.log.suffix(2).map(\.type) == [.correction, .subscriptionBillingIssue])
        #expect(outbox.log.last?.id.hasSuffix("#1") == true)
        #expect(outbox.released.last?.details["kind"] == "gracePeriod")
        #expect(outbox.net.filter { $0.contains("billing_issue") }.count == 1)
    }

    @Test("history the outbox never released is not sent by a later change")
    func olderHistoryIsNotReleased() {
        let facts = SimulatedOutbox.timelineFacts
        // Facts stored before the outbox: nothing released for them.
        let release = eventRelease(
            facts: facts + [renewal(autoRenew: false, signed: months(3) + day)], policy: policy, now: months(4), environment: .production,
            released: [], revealedFrom: months(3) + day)
        // Only what the new fact revealed: the period end it decides and the change it made.
        #expect(release.additions.map(\.event.type) == [.subscriptionExpired, .subscriptionAutoRenewDisabled])
        #expect(release.superseded.isEmpty)
    }

    /// Every lifecycle's facts delivered one by one in shuffled order, days apart (far beyond any
    /// settle window), duplicated: applying the corrections gives the complete timeline.
    @Test(arguments: Lifecycles.all)
    func netStreamIsTheHindsightTimeline(_ lifecycle: Lifecycle) {
        let facts = lifecycle.allFacts
        let end = (lifecycle.checkpoints + facts.map(\.date)).max()! + day
        let truth = said(eventTimeline(facts: facts, policy: policy, now: end, environment: .production)).sorted()
        #expect(SimulatedOutbox.run(realTime(facts), end: end).net == truth, "real time")
        #expect(SimulatedOutbox.run(realTime(facts), end: end).corrections == 0, "real time needs no correction")
        #expect(SimulatedOutbox.run(realTime(facts).map { ($0.facts, end) }, end: end).net == truth, "burst")
        for seed in 1...4 as ClosedRange<UInt64> {
            var rng = SplitMix64(seed: seed)
            let shuffled = (facts + facts.prefix(2)).shuffled(using: &rng)
            let first = facts.map(\.date).min()!
            let arrivals = shuffled.enumerated().map { ([$0.element], max($0.element.date, first + Int64($0.offset) * day)) }
            let outbox = SimulatedOutbox.run(arrivals.sorted { $0.1 < $1.1 }, end: end + Int64(arrivals.count) * day)
            let later = said(eventTimeline(facts: facts, policy: policy, now: end + Int64(arrivals.count) * day, environment: .production))
            #expect(outbox.net == later.sorted(), "shuffled \(seed)")
        }
    }
}

extension SimulatedOutbox {
    /// Three monthly periods, as Apple signs them.
    static var timelineFacts: [Fact] {
        (0..<3).flatMap { k in
            [tx("t\(k)", purchase: months(k), expires: months(k + 1)), renewal(signed: months(k))]
        }
    }
}
