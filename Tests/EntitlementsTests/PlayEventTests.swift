import Entitlements
import Testing

// Google Play purchases in the event timeline: the same vocabulary as Apple's, with `store: playStore`.

/// One Play lifecycle and the events its complete facts give.
struct PlayEventRow: CustomTestStringConvertible, Sendable {
    var name: String
    var facts: [Fact]
    /// Type, instant and subject of each event, in timeline order.
    var events: [String]
    /// Details some events must carry (by type).
    var details: [EventType: [String: String]] = [:]

    var testDescription: String { name }
}

func eventLine(_ type: EventType, _ at: Int64, _ subject: String = "t1") -> String { "\(type.rawValue) @\(at) \(subject)" }

let playEventTable: [PlayEventRow] = [
    PlayEventRow(
        name: "purchase after pending",
        facts: [play("t1", .pending, observed: T0), play("t1", .active, observed: T0 + hour)],
        events: [eventLine(.subscriptionStarted, T0)]),
    PlayEventRow(
        name: "renewal when the expiry advances",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .active, expiry: months(2), observed: months(1) + hour, order: "GPA.t1.1"),
        ],
        events: [eventLine(.subscriptionStarted, T0), eventLine(.subscriptionRenewed, months(1))],
        details: [.subscriptionRenewed: ["store": "playStore", "orderId": "GPA.t1.1", "transactionId": "t1"]]),
    PlayEventRow(
        name: "cancel, then expiry",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .canceled, observed: T0 + 5 * day, autoRenew: false),
            play("t1", .expired, observed: months(1) + hour, autoRenew: false),
        ],
        events: [eventLine(.subscriptionStarted, T0), eventLine(.subscriptionAutoRenewDisabled, T0 + 5 * day), eventLine(.subscriptionExpired, months(1))],
        details: [.subscriptionExpired: ["reason": "voluntary"]]),
    PlayEventRow(
        name: "cancel undone",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .canceled, observed: T0 + 5 * day, autoRenew: false),
            play("t1", .active, observed: T0 + 6 * day),
        ],
        events: [
            eventLine(.subscriptionStarted, T0), eventLine(.subscriptionAutoRenewDisabled, T0 + 5 * day),
            eventLine(.subscriptionAutoRenewEnabled, T0 + 6 * day),
        ]),
    PlayEventRow(
        name: "pause and resume",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .paused, observed: months(1) + hour, resume: months(2)),
            play("t1", .active, expiry: months(3), observed: months(2) + hour, order: "GPA.t1.1"),
        ],
        events: [
            eventLine(.subscriptionStarted, T0), eventLine(.subscriptionPaused, months(1)), eventLine(.subscriptionRenewed, months(2)),
            eventLine(.subscriptionResumed, months(2)),
        ],
        details: [.subscriptionPaused: ["resumesAt": String(months(2))], .subscriptionResumed: ["orderId": "GPA.t1.1"]]),
    PlayEventRow(
        name: "restarted after expiry",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .canceled, observed: T0 + 5 * day, autoRenew: false),
            play("t1", .expired, observed: months(1) + hour, autoRenew: false),
            play("t1", .active, expiry: months(3), observed: months(2), order: "GPA.t1.1"),
        ],
        events: [
            eventLine(.subscriptionStarted, T0), eventLine(.subscriptionAutoRenewDisabled, T0 + 5 * day), eventLine(.subscriptionExpired, months(1)),
            eventLine(.subscriptionRenewed, months(2)),
        ]),
    PlayEventRow(
        name: "grace, hold, recovery",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .inGracePeriod, expiry: months(1) + 7 * day, observed: months(1) + hour),
            play("t1", .onHold, expiry: months(1) + 7 * day, observed: months(1) + 7 * day + hour),
            play("t1", .active, expiry: months(2) + 8 * day, observed: months(1) + 8 * day, order: "GPA.t1.1"),
        ],
        events: [
            eventLine(.subscriptionStarted, T0), eventLine(.subscriptionBillingIssue, months(1)),
            eventLine(.subscriptionGracePeriodExpired, months(1) + 7 * day), eventLine(.subscriptionRenewed, months(1) + 8 * day),
            eventLine(.subscriptionRecovered, months(1) + 8 * day),
        ],
        details: [.subscriptionBillingIssue: ["kind": "gracePeriod", "gracePeriodExpiresAt": String(months(1) + 7 * day)]]),
    PlayEventRow(
        name: "hold until expiry",
        facts: [
            play("t1", .active, observed: T0),
            play("t1", .onHold, observed: months(1) + hour),
            play("t1", .expired, observed: months(1) + 30 * day),
        ],
        events: [
            eventLine(.subscriptionStarted, T0), eventLine(.subscriptionBillingIssue, months(1)), eventLine(.subscriptionExpired, months(1) + 30 * day),
        ],
        details: [.subscriptionBillingIssue: ["kind": "billingRetry"], .subscriptionExpired: ["reason": "billingError"]]),
    PlayEventRow(
        name: "voided current order",
        facts: [
            play("t1", .active, observed: T0),
            voided("t1", order: "GPA.t1.0", at: T0 + 3 * day),
            play("t1", .expired, observed: T0 + 3 * day + 1),
        ],
        events: [eventLine(.subscriptionStarted, T0), eventLine(.subscriptionRefunded, T0 + 3 * day, "GPA.t1.0")],
        details: [.subscriptionRefunded: ["reason": "refund", "orderId": "GPA.t1.0"]]),
    PlayEventRow(
        name: "upgrade by a linked token",
        facts: [
            play("t1", .active, observed: T0),
            play("t2", .active, product: "play.plus", start: T0 + 10 * day, observed: T0 + 10 * day, linked: "t1"),
            play("t1", .expired, observed: T0 + 10 * day + 1),
        ],
        events: [eventLine(.subscriptionStarted, T0), eventLine(.subscriptionProductChanged, T0 + 10 * day)],
        details: [.subscriptionProductChanged: ["from": "play.monthly", "to": "play.plus", "transactionId": "t2"]]),
    PlayEventRow(
        name: "one-time product bought and voided",
        facts: [
            playProduct("p1", product: "play.lifetime", state: 2, observed: T0 + day),
            playProduct("p1", product: "play.lifetime", observed: T0 + 2 * day),
            voided("p1", order: "GPA.p1", at: T0 + 5 * day, productType: 2),
        ],
        events: [eventLine(.purchaseCompleted, T0, "p1"), eventLine(.purchaseRefunded, T0 + 5 * day, "p1")]),
]

@Suite struct PlayEventTests {
    static func timeline(_ facts: [Fact], now: Int64 = months(6)) -> [CustomerEvent] {
        eventTimeline(facts: facts, policy: playPolicy, now: now, environment: .production)
    }

    @Test(arguments: playEventTable)
    func lifecycleGivesTheEvents(_ row: PlayEventRow) {
        let events = Self.timeline(row.facts)
        #expect(events.map { eventLine($0.type, $0.occurredAt, $0.subject) } == row.events)
        for event in events {
            #expect(event.details["store"] == "playStore", "\(event.type)")
            #expect(!event.entitlements.isEmpty, "\(event.type)")
            for (key, value) in row.details[event.type] ?? [:] { #expect(event.details[key] == value, "\(event.type) \(key)") }
        }
    }

    /// A purchase on a base plan the policy does not name grants nothing, so its events name no entitlement.
    @Test(arguments: [("monthly", ["basic"]), ("annual", [])])
    func basePlanDecidesTheEventsEntitlements(plan: String, entitlements: [String]) {
        let events = Self.timeline([play("t1", .active, product: "play.basic", observed: T0, basePlan: plan)])
        #expect(events.map(\.type) == [.subscriptionStarted])
        #expect(events.first?.entitlements == entitlements)
    }

    /// The lifecycle of `PlayOrderTests` shuffled and duplicated gives the same timeline, and
    /// releasing the events as the facts arrive (in observation order, repeated) gives them too.
    @Test(arguments: 1...12 as ClosedRange<UInt64>)
    func shuffledAndDuplicatedGiveTheSameEvents(seed: UInt64) {
        Self.expectOrderProof(PlayOrderTests.lifecycle, seed: seed)
    }

    /// The pause and restart rows, together (two tokens of one customer), in any order.
    @Test(arguments: 1...12 as ClosedRange<UInt64>)
    func pausesAndRestartsShuffledGiveTheSameEvents(seed: UInt64) {
        let rows = playEventTable.filter { ["pause and resume", "restarted after expiry"].contains($0.name) }
        #expect(rows.count == 2)
        let restarted = rows[1].facts.map { fact -> Fact in
            guard case .playSubscription(var p) = fact else { return fact }
            p.purchaseToken = "t2"
            return .playSubscription(p)
        }
        Self.expectOrderProof(rows[0].facts + restarted, seed: seed)
    }

    /// `facts` shuffled and duplicated give the timeline they give in order, and releasing the
    /// events as the facts arrive (in observation order, repeated) gives them too.
    static func expectOrderProof(_ facts: [Fact], seed: UInt64) {
        let end = months(6)
        let complete = Self.timeline(facts, now: end)
        #expect(Set(complete.map(\.identity)).count == complete.count)
        var rng = SplitMix64(seed: seed)
        let bag = (facts + facts.shuffled(using: &rng).prefix(5)).shuffled(using: &rng)
        #expect(said(Self.timeline(bag, now: end)) == said(complete))
        var known: [Fact] = []
        var released: [CustomerEvent] = []
        var identities = Set<String>()
        for fact in facts.sorted(by: { $0.date < $1.date }) + facts.prefix(3) {
            known.append(fact)
            for event in Self.timeline(known, now: fact.date) where identities.insert(event.identity).inserted { released.append(event) }
        }
        for event in Self.timeline(known, now: end) where identities.insert(event.identity).inserted { released.append(event) }
        #expect(said(released.sorted(by: CustomerEvent.happensBefore)) == said(complete), "seed \(seed)")
    }

    /// The lifecycle's events, every one from Play.
    @Test func lifecycleTimeline() {
        let events = Self.timeline(PlayOrderTests.lifecycle)
        let types = events.map(\.type)
        #expect(types.contains(.subscriptionStarted))
        #expect(types.contains(.subscriptionRecovered))
        #expect(types.contains(.subscriptionProductChanged))
        #expect(types.contains(.purchaseCompleted))
        #expect(events.allSatisfy { $0.details["store"] == "playStore" })
    }

    /// Apple's facts give the same timeline beside Play facts: each store's events stand alone.
    @Test func appleEventsUnchangedBesidePlay() {
        let apple = Lifecycles.all[0].allFacts
        let alone = eventTimeline(facts: apple, policy: playPolicy, now: months(6), environment: .production)
        let mixed = eventTimeline(facts: apple + PlayOrderTests.lifecycle, policy: playPolicy, now: months(6), environment: .production)
        #expect(said(mixed.filter { $0.details["store"] == "appStore" }) == said(alone))
    }
}

/// Play subscriptions in the daily rollups: stocks from the answer like Apple's, flows from the
/// timeline; these snapshots carry no price, so no money (PlayPriceTests has priced ones).
@Suite struct PlayMetricTests {
    static func sum(_ deltas: [MetricDelta], _ kind: MetricKind, through day: Int64 = .max) -> Int64 {
        deltas.filter { $0.kind == kind && $0.day <= day }.map(\.value).reduce(0, +)
    }

    @Test func playSubscriptionCountsLikeAnAppleOne() {
        let facts: [Fact] = [
            play("t1", .active, observed: T0),
            play("t1", .active, expiry: months(2), observed: months(1) + hour, order: "GPA.t1.1"),
            play("t1", .onHold, expiry: months(2), observed: months(2) + hour, order: "GPA.t1.1"),
            voided("t1", order: "GPA.t1.0", at: months(1) + 2 * day),
        ]
        let deltas = metricDeltas(facts: facts, policy: playPolicy)
        #expect(Self.sum(deltas, .activeSubscriptions, through: metricDay(T0)) == 1)
        #expect(Self.sum(deltas, .newSubscriptions) == 1)
        #expect(deltas.first { $0.kind == .newSubscriptions }?.day == metricDay(T0))
        #expect(Self.sum(deltas, .renewals) == 1)
        #expect(deltas.first { $0.kind == .renewals }?.day == metricDay(months(1)))
        #expect(Self.sum(deltas, .refunds) == 1)
        #expect(Self.sum(deltas, .inBillingRetry, through: metricDay(months(2) + hour)) == 1)
        #expect(Self.sum(deltas, .activeSubscriptions, through: metricDay(months(2) + hour)) == 0)
        #expect(Self.sum(deltas, .churned) == 1)
        #expect(!deltas.contains { $0.kind == .mrr || $0.kind == .revenue })
    }

    /// A restart after expiry counts as a renewal, not a second new subscription; so does a resumption.
    @Test(arguments: ["restarted after expiry", "pause and resume"])
    func restartsAndResumptionsAreRenewals(_ name: String) throws {
        let row = try #require(playEventTable.first { $0.name == name })
        let deltas = metricDeltas(facts: row.facts, policy: playPolicy)
        #expect(Self.sum(deltas, .newSubscriptions) == 1)
        #expect(Self.sum(deltas, .renewals) == 1)
        #expect(deltas.first { $0.kind == .renewals }?.day == metricDay(months(2)))
    }

    @Test(arguments: 1...4 as ClosedRange<UInt64>)
    func shuffledFactsGiveTheSameRollups(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let facts = PlayOrderTests.lifecycle
        let bag = (facts + facts.prefix(4)).shuffled(using: &rng)
        #expect(metricDeltas(facts: bag, policy: playPolicy) == metricDeltas(facts: facts, policy: playPolicy))
    }
}
