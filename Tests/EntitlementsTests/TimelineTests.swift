import Entitlements
import Testing

/// What a timeline says, without what only names positions (``CustomerEvent/causeIndex``).
func said(_ events: [CustomerEvent]) -> [String] {
    events.map { event in
        let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return "\(event.type) @\(event.occurredAt) \(event.subject) [\(details)] \(event.entitlements)"
    }
}

/// The events a server would have emitted, ingesting `arrivals` one after the other (each with the
/// instant it arrived at) and appending the events of the timeline it did not emit before, then
/// once more at `end`; in the order they were emitted, each batch in timeline order.
func accumulated(_ arrivals: [(facts: [Fact], at: Int64)], end: Int64) -> [CustomerEvent] {
    var known: [Fact] = []
    var emitted: [CustomerEvent] = []
    var identities = Set<String>()
    for (facts, at) in arrivals + [([], end)] {
        known += facts
        for event in eventTimeline(facts: known, policy: policy, now: at, environment: .production)
        where identities.insert(event.identity).inserted {
            emitted.append(event)
        }
    }
    return emitted
}

/// Facts grouped by signed date, in signed order: as Apple sends them.
func realTime(_ facts: [Fact]) -> [(facts: [Fact], at: Int64)] {
    Dictionary(grouping: facts, by: \.date).sorted { $0.key < $1.key }.map { ($0.value, $0.key) }
}

@Suite struct TimelineTests {
    /// The same events whether the facts come as they happen, all at once later (one message at a
    /// time, in signed order), or with Apple's retries repeating them; and the complete facts in any
    /// order give one timeline.
    @Test(arguments: Lifecycles.all)
    func sameStreamHoweverFactsArrive(_ lifecycle: Lifecycle) {
        let facts = lifecycle.allFacts
        let end = (lifecycle.checkpoints + facts.map(\.date)).max()! + day
        let complete = eventTimeline(facts: facts, policy: policy, now: end, environment: .production)
        #expect(!complete.isEmpty)
        #expect(Set(complete.map(\.identity)).count == complete.count)
        let live = accumulated(realTime(facts), end: end)
        #expect(said(live.sorted(by: CustomerEvent.happensBefore)) == said(complete), "real time")
        let burst = accumulated(realTime(facts).map { ($0.facts, end) }, end: end)
        #expect(said(burst.sorted(by: CustomerEvent.happensBefore)) == said(complete), "burst")
        #expect(said(burst) == said(complete), "a burst in signed order emits in the order things happened")
        var rng = SplitMix64(seed: 7)
        var repeated: [(facts: [Fact], at: Int64)] = []
        for arrival in realTime(facts) {
            repeated.append(arrival)
            if Bool.random(using: &rng) { repeated.append(arrival) }
        }
        let duplicated = accumulated(repeated.map { ($0.facts, end) }, end: end)
        #expect(said(duplicated.sorted(by: CustomerEvent.happensBefore)) == said(complete), "duplicated")
        for seed in 1...3 as ClosedRange<UInt64> {
            var rng = SplitMix64(seed: seed)
            let shuffled = (facts + facts.prefix(3)).shuffled(using: &rng)
            #expect(said(eventTimeline(facts: shuffled, policy: policy, now: end, environment: .production)) == said(complete))
        }
    }

    /// No `expired` while the subscription still granted access, and no auto-renew event but where
    /// `autoRenewStatus` changed between successive renewal infos.
    @Test(arguments: Lifecycles.all)
    func eventsSayWhatHappened(_ lifecycle: Lifecycle) {
        let facts = lifecycle.allFacts
        let end = (lifecycle.checkpoints + facts.map(\.date)).max()! + day
        for event in eventTimeline(facts: facts, policy: policy, now: end, environment: .production) {
            switch event.type {
            case .subscriptionExpired, .subscriptionGracePeriodExpired:
                // What was known once it was decided, but no period bought after it.
                let known = facts.filter { fact in
                    if case .transaction(let t) = fact, t.purchaseDate > event.occurredAt { return false }
                    if case .receiptEntry(let e) = fact, e.purchaseDate > event.occurredAt { return false }
                    return fact.date <= event.basis
                }
                let after = evaluate(facts: known, policy: policy, now: event.occurredAt + 1, environment: .production)
                let access = after.entitlements.contains { $0.originalTransactionId == event.originalTransactionId && $0.active }
                #expect(!access, "\(event.type) at \(event.occurredAt) in \(lifecycle.name)")
            case .subscriptionAutoRenewEnabled, .subscriptionAutoRenewDisabled:
                let statuses = facts.compactMap { fact -> (Int64, Bool)? in
                    switch fact {
                    case .renewalInfo(let r) where r.originalTransactionId == event.originalTransactionId: (r.signedDate, r.autoRenewStatus)
                    case .pendingRenewal(let r) where r.originalTransactionId == event.originalTransactionId: (r.receiptDate, r.autoRenewStatus)
                    default: nil
                    }
                }
                let enabled = event.type == .subscriptionAutoRenewEnabled
                #expect(statuses.contains { $0.0 == event.occurredAt && $0.1 == enabled })
                #expect(statuses.filter { $0.0 < event.occurredAt }.max { $0.0 < $1.0 }?.1 == !enabled)
            default: continue
            }
        }
    }

    /// Every type the timeline emits is in the vocabulary, and the vocabulary has each type once.
    @Test func vocabulary() {
        #expect(Set(EventType.allDocumented).count == EventType.allDocumented.count)
        for lifecycle in Lifecycles.all {
            let facts = lifecycle.allFacts
            for event in eventTimeline(facts: facts, policy: policy, now: facts.map(\.date).max()! + 400 * day, environment: .production) {
                #expect(EventType.allDocumented.contains(event.type))
                #expect(event.details["store"] == "appStore")
                #expect(event.details["periodType"] != nil)
            }
        }
    }
}
