// Metrics: what one customer contributes to the subscription rollups, day by day (UTC).
//
// A customer's subscriptions are evaluated by the engine itself at the end of each day on which
// something can have changed — a day one of their facts is dated, or the day of a state's
// `nextStatusChangeAt` — with the facts dated up to that instant: the answer the server gave at
// the end of that day. Between two such days nothing changes, so the evaluations are few (about
// two per billing period). Stocks (active subscriptions, trials, grace, billing retry, MRR) are
// written as the day's change; flows (new, renewals, churn, refunds, conversions, recoveries,
// revenue) as the day's count or amount: churn, conversions and recoveries from the day-end
// answers, new, renewals, refunds and revenue from the transactions' own dates. The storage layer keeps each customer's deltas and
// adds the difference to the shared daily rollup when they change. The same evaluations also
// give the charts' segmented rows (ChartContribution.swift, docs/charts.md).

/// One rollup series.
public enum MetricKind: String, Hashable, Sendable, CaseIterable {
    /// Subscriptions granting paid access (active or in grace period, not in a free trial): a stock.
    case activeSubscriptions
    /// Subscriptions granting access in a free trial: a stock.
    case activeTrials
    /// Subscriptions in Apple's billing grace period (still granting access): a stock.
    case inGracePeriod
    /// Subscriptions in billing retry (no access while Apple retries): a stock.
    case inBillingRetry
    /// Monthly recurring revenue of the paid active subscriptions, per currency, in milli-units: a stock.
    case mrr
    /// Subscriptions bought for the first time (a free trial's start included), by the first
    /// purchase date of their originalTransactionId: a flow.
    case newSubscriptions
    /// Renewal transactions (a new period of an existing subscription), by purchase date: a flow.
    case renewals
    /// Subscriptions that stopped granting access (expired, refunded, revoked, billing retry): a flow.
    case churned
    /// Refunded transactions, by revocation date: a flow.
    case refunds
    /// The refunded transactions' prices, per currency, in milli-units: a flow.
    case refundAmount
    /// Free trials that became paid: a flow.
    case conversions
    /// Subscriptions back to active from grace period or billing retry: a flow.
    case recoveries
    /// Prices of paid subscription transactions, per currency, in milli-units, by purchase date: a flow.
    case revenue

    /// Whether the series is a level at the end of each day (summed from the start of time)
    /// rather than a count within the day.
    public var isStock: Bool {
        switch self {
        case .activeSubscriptions, .activeTrials, .inGracePeriod, .inBillingRetry, .mrr: true
        default: false
        }
    }
}

/// One customer's change to one series on one day.
public struct MetricDelta: Hashable, Sendable {
    public var environment: Environment
    /// Days since 1970-01-01 (UTC).
    public var day: Int64
    public var kind: MetricKind
    /// ISO 4217 code for money series, "" for counts.
    public var currency: String
    public var value: Int64

    public init(environment: Environment, day: Int64, kind: MetricKind, currency: String = "", value: Int64) {
        self.environment = environment
        self.day = day
        self.kind = kind
        self.currency = currency
        self.value = value
    }
}

extension Fact {
    /// The instant the fact speaks for: Apple's `signedDate` (a receipt's or V1 notification's own
    /// date, a spend's time).
    public var date: Int64 {
        switch self {
        case .transaction(let f): f.signedDate
        case .renewalInfo(let f): f.signedDate
        case .notification(let f): f.signedDate
        case .appTransaction(let f): f.signedDate
        case .receiptEntry(let f): f.receiptDate
        case .pendingRenewal(let f): f.receiptDate
        case .v1Notification(let f): f.date
        case .consumableSpend(let f): f.spentAt
        case .promotionalGrant(let f): f.grantedAt
        case .promotionalGrantEnd(let f): f.endedAt
        case .playSubscription(let f): f.observedAt
        case .playProduct(let f): f.observedAt
        case .playVoided(let f): f.voidedTime
        case .playOrder(let f): f.purchaseTime
        }
    }
}

/// The day (since the epoch, UTC) an instant falls on.
public func metricDay(_ instant: Int64) -> Int64 {
    Time.floorDiv(instant, Time.day)
}

/// At most this many evaluations per customer and environment: a bound, never reached by a real
/// history (one a day for 27 years).
let maxMetricEvaluations = 10_000

/// Everything one customer contributes to the daily rollups, summed per (environment, day, kind,
/// currency), zeros dropped, in a fixed order.
public func metricDeltas(facts: [Fact], policy: Policy) -> [MetricDelta] {
    metricContribution(facts: facts, policy: policy).deltas
}

/// A customer's contribution and how many engine evaluations it took.
public struct MetricContribution: Sendable, Hashable {
    public var deltas: [MetricDelta]
    /// The segmented chart rows (``ChartDelta``), summed the same way.
    public var charts: [ChartDelta] = []
    /// Engine evaluations spent (the cost the incremental form saves).
    public var evaluations: Int
}

/// ``metricDeltas(facts:policy:)``, recomputing the day-end evaluations only from `day` on when
/// `stored` is the contribution of the same facts minus some dated on `day` or later: an
/// evaluation at the end of an earlier day sees only facts dated up to then, so `stored`'s
/// stock and state-change deltas before `day` stand. The transaction flows (new, renewals,
/// refunds, revenue) are dated by purchase and revocation, not by the fact, and need no
/// evaluation: they are always computed from every fact. `reusingCharts` are the stored chart
/// rows of the same contribution, reused the same way.
public func metricContribution(
    facts: [Fact], policy: Policy, reusing stored: (deltas: [MetricDelta], from: Int64)? = nil, reusingCharts: [ChartDelta] = []
) -> MetricContribution {
    var sums: [MetricKey: Int64] = [:]
    var charts: [ChartKey: Int64] = [:]
    var evaluations = 0
    if let stored {
        for d in stored.deltas where d.kind.fromTimeline && d.day < stored.from {
            sums[MetricKey(environment: d.environment, day: d.day, kind: d.kind, currency: d.currency), default: 0] += d.value
        }
        for d in reusingCharts where d.kind.fromTimeline && d.day < stored.from { charts[d.key, default: 0] += d.value }
    }
    let environments = Set(facts.map(\.environment)).sorted { $0.rawValue < $1.rawValue }
    for environment in environments {
        let own = facts.filter { $0.environment == environment }.sorted { $0.date < $1.date }
        let play = playPeriods(own, policy: policy)
        evaluations += timeline(own, play: play, policy: policy, environment: environment, from: stored?.from, into: &sums, charts: &charts)
        transactionFlows(own, environment: environment, into: &sums)
        chartTransactionFlows(own, play: play, environment: environment, into: &charts)
        playFlows(own, periods: play, policy: policy, environment: environment, into: &sums)
    }
    let deltas = sums.compactMap { key, value in
        value == 0 ? nil
            : MetricDelta(environment: key.environment, day: key.day, kind: key.kind, currency: key.currency, value: value)
    }.sorted(by: MetricDelta.precedes)
    let chartDeltas = charts.compactMap { key, value in
        value == 0 ? nil
            : ChartDelta(environment: key.environment, day: key.day, kind: key.kind, currency: key.currency, segment: key.segment,
                         offset: key.offset, value: value)
    }.sorted(by: ChartDelta.precedes)
    return MetricContribution(deltas: deltas, charts: chartDeltas, evaluations: evaluations)
}

extension MetricDelta {
    /// A contribution's order: by environment, day, kind and currency, as the tuple of them
    /// orders, compared one by one without copying them into tuples (every ingest sorts its
    /// customer's contribution).
    static func precedes(_ a: Self, _ b: Self) -> Bool {
        if a.environment != b.environment { return a.environment.rawValue < b.environment.rawValue }
        if a.day != b.day { return a.day < b.day }
        if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
        return a.currency < b.currency
    }
}

extension ChartDelta {
    /// A contribution's chart rows' order: by environment, day, kind, currency, segment and
    /// offset (as ``MetricDelta/precedes(_:_:)``).
    static func precedes(_ a: Self, _ b: Self) -> Bool {
        if a.environment != b.environment { return a.environment.rawValue < b.environment.rawValue }
        if a.day != b.day { return a.day < b.day }
        if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
        if a.currency != b.currency { return a.currency < b.currency }
        if a.segment != b.segment { return a.segment < b.segment }
        return a.offset < b.offset
    }
}

extension MetricKind {
    /// Whether the series comes from the day-end evaluations (stocks and state changes) rather
    /// than from the transactions' own dates.
    var fromTimeline: Bool {
        switch self {
        case .newSubscriptions, .renewals, .refunds, .refundAmount, .revenue: false
        default: true
        }
    }
}

struct MetricKey: Hashable {
    var environment: Environment
    var day: Int64
    var kind: MetricKind
    var currency: String
}

/// A subscription's standing at the end of one day.
struct Standing: Equatable {
    var status: EntitlementStatus
    var trial: Bool
    var transactionId: String
    var monthly: Int64
    var currency: String
    /// The store, product, storefront and period type the charts segment it by.
    var segment: ChartSegment

    var paid: Bool { status.grantsAccess && !trial }
}

/// Stocks and state-change flows, from the engine's answers at the end of each day that matters,
/// from day `start` on when given (the standings before it from one evaluation at the end of the
/// day before). Returns the evaluations spent.
private func timeline(
    _ facts: [Fact], play: [PlayPeriod], policy: Policy, environment: Environment, from start: Int64?,
    into sums: inout [MetricKey: Int64], charts: inout [ChartKey: Int64]
) -> Int {
    guard let first = facts.first else { return 0 }
    var latest: [String: TransactionFact] = [:]
    // A Play grant's transaction is the period of the order its token's newest snapshot names.
    var playNewest: [String: PlaySubscriptionFact] = [:]
    var playPeriod: [PlayOrderKey: TransactionFact] = [:]
    for period in play { playPeriod[PlayOrderKey(token: period.token, orderId: period.orderId)] = period.transaction }
    var previous: [String: Standing] = [:]
    var index = 0
    var evaluations = 0
    var day = metricDay(first.date)
    func absorb(through end: Int64) {
        while index < facts.count, facts[index].date <= end {
            if case .transaction(let t) = facts[index], latest[t.transactionId].map({ $0.signedDate <= t.signedDate }) ?? true {
                latest[t.transactionId] = t
            }
            if case .playSubscription(let p) = facts[index], p.state.isGranted {
                if playNewest[p.purchaseToken].map({ Canon.isNewer(p, than: $0) }) ?? true { playNewest[p.purchaseToken] = p }
                if let period = playPeriod[PlayOrderKey(token: p.purchaseToken, orderId: p.latestOrderId)] {
                    latest[period.transactionId] = period
                }
            }
            index += 1
        }
    }
    func standings(_ state: CustomerState) -> [String: Standing] {
        var current: [String: Standing] = [:]
        for group in state.subscriptionGroups {
            guard let grant = group.current, grant.productType == .autoRenewable else { continue }
            let transaction =
                grant.store == .playStore
                ? playNewest[grant.transactionId].flatMap { playPeriod[PlayOrderKey(token: $0.purchaseToken, orderId: $0.latestOrderId)] }
                : latest[grant.transactionId]
            current[grant.originalTransactionId] = Standing(
                status: grant.status, trial: grant.periodType == .trial, transactionId: transaction?.transactionId ?? grant.transactionId,
                monthly: transaction.map(monthlyPrice) ?? 0, currency: transaction?.currency ?? "",
                segment: ChartSegment(
                    store: grant.store.rawValue, product: grant.productId, storefront: transaction?.storefront ?? "",
                    periodType: grant.periodType.rawValue))
        }
        return current
    }
    if let start, start > day {
        // Resuming: nothing changes between two evaluation days, so the standings at the end of
        // the day before `start` are those the full run carries into its first day from `start`.
        let end = start * Time.day - 1
        absorb(through: end)
        let state = evaluate(facts: Array(facts[..<index]), policy: policy, now: end, environment: environment)
        evaluations += 1
        previous = standings(state)
        let nextFact = index < facts.count ? metricDay(facts[index].date) : nil
        guard let next = [nextFact, state.nextStatusChangeAt.map(metricDay)].compactMap({ $0 }).min() else { return evaluations }
        day = max(next, start)
    }
    for _ in 0..<maxMetricEvaluations {
        let end = (day + 1) * Time.day - 1
        absorb(through: end)
        let state = evaluate(facts: Array(facts[..<index]), policy: policy, now: end, environment: environment)
        evaluations += 1
        let current = standings(state)
        func add(_ kind: MetricKind, _ value: Int64, currency: String = "") {
            sums[MetricKey(environment: environment, day: day, kind: kind, currency: currency), default: 0] += value
        }
        for standing in previous.values { addStock(standing, sign: -1, add: add) }
        for standing in current.values { addStock(standing, sign: 1, add: add) }
        for (id, now) in current {
            let before = previous[id]
            if let before, before.status.grantsAccess, before.trial, now.paid { add(.conversions, 1) }
            if let before, before.status == .gracePeriod || before.status == .billingRetry, now.status == .active {
                add(.recoveries, 1)
            }
        }
        for (id, before) in previous where before.status.grantsAccess && !(current[id]?.status.grantsAccess ?? false) {
            add(.churned, 1)
        }
        chartTransitions(previous: previous, current: current, day: day, environment: environment, latest: latest, into: &charts)
        previous = current
        let nextFact = index < facts.count ? metricDay(facts[index].date) : nil
        let nextChange = state.nextStatusChangeAt.map(metricDay)
        guard let next = [nextFact, nextChange].compactMap({ $0 }).min() else { return evaluations }
        day = max(next, day + 1)
    }
    return evaluations
}

private func addStock(_ standing: Standing, sign: Int64, add: (MetricKind, Int64, String) -> Void) {
    if standing.paid {
        add(.activeSubscriptions, sign, "")
        if !standing.currency.isEmpty { add(.mrr, sign * standing.monthly, standing.currency) }
    } else if standing.status.grantsAccess {
        add(.activeTrials, sign, "")
    }
    if standing.status == .gracePeriod { add(.inGracePeriod, sign, "") }
    if standing.status == .billingRetry { add(.inBillingRetry, sign, "") }
}

/// A period's price as a monthly amount (milli-units): weekly periods × 52/12, others divided by
/// their length in months (30.44 days each, at least one).
func monthlyPrice(_ transaction: TransactionFact) -> Int64 {
    guard let price = transaction.price, let expires = transaction.expiresDate else { return 0 }
    let days = max(0, expires.minus(transaction.purchaseDate)) / Time.day
    if days <= 10 { return price * 52 / 12 }
    let months = max(1, (days * 100 + 1522) / 3044)
    return price / months
}

/// Renewals, revenue and refunds, from the newest version of each subscription transaction.
private func transactionFlows(_ facts: [Fact], environment: Environment, into sums: inout [MetricKey: Int64]) {
    var latest: [String: TransactionFact] = [:]
    for case .transaction(let t) in facts where t.productType == .autoRenewable {
        if latest[t.transactionId].map({ $0.signedDate <= t.signedDate }) ?? true { latest[t.transactionId] = t }
    }
    func add(_ kind: MetricKind, _ instant: Int64, _ value: Int64, currency: String = "") {
        sums[MetricKey(environment: environment, day: metricDay(instant), kind: kind, currency: currency), default: 0] += value
    }
    // A subscription is new on the day of its first purchase (a trial's start included), even
    // when it is refunded before the day ends.
    var firstPurchase: [String: Int64] = [:]
    for t in latest.values { firstPurchase[t.originalTransactionId] = min(firstPurchase[t.originalTransactionId] ?? .max, t.purchaseDate) }
    for instant in firstPurchase.values { add(.newSubscriptions, instant, 1) }
    for t in latest.values {
        let renewal = t.transactionReason.map { $0 == .renewal } ?? (t.transactionId != t.originalTransactionId)
        if renewal && !t.isUpgraded { add(.renewals, t.purchaseDate, 1) }
        let trial = t.offerType == .introductory && t.offerDiscountType == .freeTrial
        if let price = t.price, price > 0, let currency = t.currency, !trial {
            add(.revenue, t.purchaseDate, price, currency: currency)
            if let revoked = t.revocationDate {
                add(.refunds, revoked, 1)
                add(.refundAmount, revoked, price, currency: currency)
            }
        } else if let revoked = t.revocationDate {
            add(.refunds, revoked, 1)
        }
    }
}

/// Play subscriptions' new subscriptions, renewals and refunds, from the timeline's events (a Play
/// snapshot names no transaction per period: the timeline reads periods from the expiry advancing);
/// revenue and refunded amounts from the priced `periods`, as Apple's from its transactions.
private func playFlows(
    _ facts: [Fact], periods: [PlayPeriod], policy: Policy, environment: Environment, into sums: inout [MetricKey: Int64]
) {
    for t in periods.map(\.transaction) where t.productType == .autoRenewable && t.isPaid {
        sums[MetricKey(environment: environment, day: metricDay(t.purchaseDate), kind: .revenue, currency: t.currency!), default: 0] += t.price!
        if let revoked = t.revocationDate {
            sums[MetricKey(environment: environment, day: metricDay(revoked), kind: .refundAmount, currency: t.currency!), default: 0] += t.price!
        }
    }
    let play = facts.filter {
        switch $0 {
        case .playSubscription, .playVoided: true
        default: false
        }
    }
    guard !play.isEmpty else { return }
    for event in eventTimeline(facts: play, policy: policy, now: .max, environment: environment) {
        let kind: MetricKind
        switch event.type {
        case .subscriptionStarted: kind = .newSubscriptions
        case .subscriptionRenewed: kind = .renewals
        case .subscriptionRefunded: kind = .refunds
        default: continue
        }
        sums[MetricKey(environment: environment, day: metricDay(event.occurredAt), kind: kind, currency: ""), default: 0] += 1
    }
}
