// Corrections: what to release for a customer when their facts change, given what was released.
// Events already sent are never taken back; when hindsight disproves some (an `expired` that a
// renewal signed long after contradicts), one `correction` names them and the true events follow.

/// An event already released for a customer (the outbox holds it), as the timeline compares it.
public struct ReleasedEvent: Sendable, Hashable {
    /// Its id in the outbox.
    public var id: String
    public var type: EventType
    public var occurredAt: Int64
    public var environment: Environment
    public var originalTransactionId: String
    public var productId: String
    public var entitlements: [String]
    /// Its details, `transactionId` included.
    public var details: [String: String]
    /// Whether a correction released since names it.
    public var superseded: Bool

    public init(
        id: String, type: EventType, occurredAt: Int64, environment: Environment, originalTransactionId: String, productId: String,
        entitlements: [String], details: [String: String], superseded: Bool
    ) {
        self.id = id
        self.type = type
        self.occurredAt = occurredAt
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.entitlements = entitlements
        self.details = details
        self.superseded = superseded
    }

    /// What it is about, as ``CustomerEvent/subject`` says for its type.
    public var subject: String { type.isAboutTransaction ? details["transactionId"] ?? "" : originalTransactionId }

    /// The identity it was released under (``CustomerEvent/identityKey``, after the type).
    public var identityKey: [String] { type == .subscriptionStarted ? [subject] : [subject, String(occurredAt)] }

    /// Whether `event` says the same: identity and every field a consumer reads.
    func says(_ event: CustomerEvent) -> Bool {
        (type, occurredAt, environment, originalTransactionId, productId) == (event.type, event.occurredAt, event.environment, event.originalTransactionId, event.productId)
            && subject == event.subject && entitlements == event.entitlements && details == event.details
    }
}

extension EventType {
    /// Types whose subject is a transaction (a refund, its reversal, an offer, a purchase) rather
    /// than the subscription.
    public var isAboutTransaction: Bool {
        [.purchaseCompleted, .purchaseRefunded, .purchaseRefundReversed, .subscriptionRefunded, .subscriptionRevoked,
         .subscriptionRefundReversed, .subscriptionOfferRedeemed].contains(self)
    }

    /// Types the timeline decides (``eventTimeline(facts:policy:now:environment:)``): those a
    /// correction may supersede.
    public static let timelineTypes: Set<EventType> = [
        .purchaseCompleted, .subscriptionStarted, .subscriptionProductChanged, .subscriptionRenewed, .subscriptionRecovered,
        .subscriptionOfferRedeemed, .subscriptionExtended, .subscriptionRefundReversed, .purchaseRefundReversed,
        .subscriptionPriceIncrease, .subscriptionAutoRenewEnabled, .subscriptionAutoRenewDisabled, .subscriptionBillingIssue,
        .subscriptionGracePeriodExpired, .subscriptionRefunded, .subscriptionRevoked, .purchaseRefunded, .subscriptionExpired,
        .subscriptionPaused, .subscriptionResumed,
    ]
}

/// What to release for a customer in one environment: ``eventRelease(facts:policy:now:environment:released:revealedFrom:)``.
public struct EventRelease: Sendable {
    /// A timeline event to release, and how many versions of its identity were released before
    /// (0: its first release; more: it corrects one a correction supersedes).
    public struct Addition: Sendable {
        public var event: CustomerEvent
        public var revision: Int
    }

    /// The events to release, in timeline order.
    public var additions: [Addition] = []
    /// The released events hindsight disproves (ids, in the order they were given): a
    /// `correction` names them, and the additions are the true history that replaces them.
    public var superseded: [String] = []
}

/// What a change of a customer's facts releases in `environment`: the customer's timeline
/// (``eventTimeline(facts:policy:now:environment:)``) compared with the events already released.
///
/// - A released event (not superseded yet) that the timeline has with the same fields stays.
/// - One the timeline lacks, or has with other fields (an `expired` a late renewal disproves, a
///   `billing_issue` whose grace period end changed), is superseded.
/// - A timeline event not released (or only in superseded versions) is released when the change
///   revealed it: it rests on a fact signed at or after `earliest` (the earliest signed date the
///   change brought), time alone revealed it, it replaces a superseded version, or the facts signed
///   before `earliest` did not give it. Events of a history older than the outbox (never released,
///   already there without the change) are not sent again.
///
/// So a consumer that drops the events each correction supersedes holds exactly the timeline.
/// Pure; `released` in any order.
public func eventRelease(
    facts: [Fact], policy: Policy, now: Int64, environment: Environment, released: [ReleasedEvent], revealedFrom earliest: Int64
) -> EventRelease {
    let timeline = eventTimeline(facts: facts, policy: policy, now: now, environment: environment)
    let mine = released.filter { $0.environment == environment && EventType.timelineTypes.contains($0.type) }
    var versions: [String: [ReleasedEvent]] = [:]
    for event in mine { versions[CustomerEvent.identity(event.type, event.identityKey), default: []].append(event) }
    var result = EventRelease()
    var matched = Set<String>()
    var before: Set<String>?
    for event in timeline {
        let all = versions[event.identity] ?? []
        if let live = all.first(where: { !$0.superseded && $0.says(event) }) {
            matched.insert(live.id)
            continue
        }
        if all.isEmpty, event.basis < earliest, event.occurredAt <= event.basis {
            // Revealed by the change only if the facts signed before it did not give it already.
            let known =
                before
                ?? Set(eventTimeline(facts: facts.filter { $0.date < earliest }, policy: policy, now: now, environment: environment).map(\.identity))
            before = known
            if known.contains(event.identity) { continue }
        }
        result.additions.append(EventRelease.Addition(event: event, revision: all.count))
    }
    result.superseded = mine.filter { !$0.superseded && !matched.contains($0.id) }.map(\.id)
    return result
}
