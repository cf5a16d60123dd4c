// Chart rollups: what one customer contributes to the segmented daily series the charts are read
// from (docs/charts.md). They come from the same day-end evaluations as the overview's rollups
// (``metricContribution(facts:policy:reusing:reusingCharts:)``): stocks and state changes from the
// answers, with the store, product, storefront and period type of the transaction behind each
// subscription's standing; transaction and cohort flows from every transaction's newest version,
// dated by purchase, revocation or the cohort's first day.

/// One segmented rollup series.
public enum ChartKind: String, Hashable, Sendable, CaseIterable {
    /// Subscriptions granting paid access at the end of the day: a stock.
    case actives
    /// Subscriptions granting access in a free trial: a stock.
    case trials
    /// Monthly recurring revenue of the paid subscriptions (milli-units, per currency): a stock.
    case mrr
    /// Subscriptions granting paid access for the first time (their first paid transaction): a flow.
    case activesNew
    /// Subscriptions granting paid access again after an earlier paid period had ended: a flow.
    case activesReactivated
    /// Subscriptions that stopped granting paid access (to no access or back to a trial): a flow.
    case activesChurned
    /// MRR of ``activesNew``, ``activesReactivated``, of price changes while paid (expansion
    /// positive, contraction negative) and of ``activesChurned`` (negative): flows, per currency.
    case mrrNew, mrrReactivated, mrrExpansion, mrrContraction, mrrChurned
    /// Free trials starting to grant access, becoming paid, and ending without a payment: flows.
    case trialsNew, trialsConverted, trialsExpired
    /// Prices of paid transactions by purchase date (milli-units, per currency): a flow.
    case revenue
    /// ``revenue`` after the store's commission (30 % in a subscription's first paid year, 15 % after).
    case proceeds
    /// Refunded transactions' prices by revocation date (per currency) and their count: flows.
    case refundAmount, refunds
    /// Paid transactions by purchase date, and of them those refunded since: purchase cohorts.
    case paidTransactions, refundedTransactions
    /// Customers by the day of their first transaction (in the environment): a cohort's size.
    case customersNew
    /// Of ``customersNew``, those with a paid transaction not refunded: dated by the cohort.
    case customersPaying
    /// Of ``customersNew``, their paid transactions' prices less refunds (per currency): dated by the cohort.
    case customerRevenue
    /// Subscriptions whose free trial started that day, and of them those followed by a paid transaction.
    case trialStarts, trialConversions
    /// Subscriptions whose first paid transaction was that day, and with `offset` k: those a paid,
    /// unrefunded transaction covers k calendar months after that purchase.
    case subscriptionStarts, subscriptionRetained

    /// Whether the series is a level at the end of each day rather than a count within the day.
    public var isStock: Bool { self == .actives || self == .trials || self == .mrr }

    /// Whether the series comes from the day-end evaluations (recomputed only from a new fact's
    /// day on) rather than from the transactions (always recomputed).
    var fromTimeline: Bool {
        switch self {
        case .actives, .trials, .mrr, .activesNew, .activesReactivated, .activesChurned, .mrrNew, .mrrReactivated,
             .mrrExpansion, .mrrContraction, .mrrChurned, .trialsNew, .trialsConverted, .trialsExpired: true
        default: false
        }
    }
}

/// What a chart can be segmented by, as stored with every chart rollup row.
public struct ChartSegment: Hashable, Sendable, Comparable {
    /// A ``PurchaseStore`` raw value: `appStore` or `playStore`.
    public var store: String
    public var product: String
    /// The storefront's ISO 3166-1 alpha-3 country code ("" when unknown).
    public var storefront: String
    /// A ``PeriodType`` raw value.
    public var periodType: String

    public init(store: String = "appStore", product: String, storefront: String, periodType: String) {
        self.store = store
        self.product = product
        self.storefront = storefront
        self.periodType = periodType
    }

    init(_ t: TransactionFact?, store: PurchaseStore = .appStore) {
        self.init(
            store: store.rawValue, product: t?.productId ?? "", storefront: t?.storefront ?? "",
            periodType: (t?.periodType ?? .normal).rawValue)
    }

    public static func < (a: Self, b: Self) -> Bool {
        if a.store != b.store { return a.store < b.store }
        if a.product != b.product { return a.product < b.product }
        if a.storefront != b.storefront { return a.storefront < b.storefront }
        return a.periodType < b.periodType
    }
}

/// One customer's change to one segmented series on one day.
public struct ChartDelta: Hashable, Sendable {
    public var environment: Environment
    /// Days since 1970-01-01 (UTC).
    public var day: Int64
    public var kind: ChartKind
    /// ISO 4217 code for money series, "" for counts.
    public var currency: String
    public var segment: ChartSegment
    /// Months since the cohort's start (``ChartKind/subscriptionRetained``), else 0.
    public var offset: Int64
    public var value: Int64

    public init(
        environment: Environment, day: Int64, kind: ChartKind, currency: String = "", segment: ChartSegment,
        offset: Int64 = 0, value: Int64
    ) {
        self.environment = environment
        self.day = day
        self.kind = kind
        self.currency = currency
        self.segment = segment
        self.offset = offset
        self.value = value
    }

    var key: ChartKey {
        ChartKey(environment: environment, day: day, kind: kind, currency: currency, segment: segment, offset: offset)
    }
}

struct ChartKey: Hashable {
    var environment: Environment
    var day: Int64
    var kind: ChartKind
    var currency: String
    var segment: ChartSegment
    var offset: Int64
}

extension TransactionFact {
    /// The kind of period the transaction bought, from its offer.
    public var periodType: PeriodType {
        switch offerType {
        case .introductory?: offerDiscountType == .freeTrial ? .trial : .intro
        case .promotional?: .promotional
        case .offerCode?: .offerCode
        case .winBack?: .winBack
        case .retentionOffer?: .retentionOffer
        case nil: .normal
        }
    }

    /// Whether the transaction was paid for: a price above zero, outside a free trial.
    var isPaid: Bool { (price ?? 0) > 0 && currency != nil && periodType != .trial }

    /// Whether Apple refunded or revoked it (an upgrade's revocation is not a refund).
    var isRefunded: Bool { revocationDate != nil && !isUpgraded }
}

/// The store's commission on a paid transaction, in percent: the App Store takes 30 %, 15 % on a
/// subscription's transactions after its first paid year; Google Play 15 % on every subscription
/// transaction and 30 % on other products (its reduced tiers depend on the developer's yearly
/// earnings, which the ledger does not know; Apple's Small Business Program likewise).
func storeCommission(_ store: PurchaseStore, productType: ProductType, paidFor: Int64) -> Int64 {
    switch store {
    case .appStore: productType == .autoRenewable && paidFor >= 365 * Time.day ? 15 : 30
    case .playStore: productType == .autoRenewable ? 15 : 30
    }
}

/// The longest retention a subscription is followed for, in months.
let maxRetentionMonths: Int64 = 600

/// The chart rows of one day-end evaluation: the stock changes of each subscription's standing
/// and the transitions between yesterday's and today's.
func chartTransitions(
    previous: [String: Standing], current: [String: Standing], day: Int64, environment: Environment,
    latest: [String: TransactionFact], into sums: inout [ChartKey: Int64]
) {
    func add(_ kind: ChartKind, _ value: Int64, _ standing: Standing, currency: String = "") {
        guard value != 0 else { return }
        sums[ChartKey(environment: environment, day: day, kind: kind, currency: currency, segment: standing.segment, offset: 0), default: 0] += value
    }
    func stock(_ standing: Standing, _ sign: Int64) {
        if standing.paid {
            add(.actives, sign, standing)
            if !standing.currency.isEmpty { add(.mrr, sign * standing.monthly, standing, currency: standing.currency) }
        } else if standing.status.grantsAccess {
            add(.trials, sign, standing)
        }
    }
    for standing in previous.values { stock(standing, -1) }
    for standing in current.values { stock(standing, 1) }
    for (id, now) in current {
        let before = previous[id]
        let wasPaid = before?.paid ?? false
        let wasTrial = before.map { $0.status.grantsAccess && $0.trial } ?? false
        if now.paid && !wasPaid {
            // New when no paid transaction of the subscription was bought before this one.
            let purchase = latest[now.transactionId]?.purchaseDate ?? .max
            let earlier = latest.values.contains { $0.originalTransactionId == id && $0.isPaid && $0.purchaseDate < purchase }
            add(earlier ? .activesReactivated : .activesNew, 1, now)
            add(earlier ? .mrrReactivated : .mrrNew, now.monthly, now, currency: now.currency)
        } else if now.paid, let before, wasPaid {
            if before.currency != now.currency {
                add(.mrrContraction, -before.monthly, before, currency: before.currency)
                add(.mrrExpansion, now.monthly, now, currency: now.currency)
            } else if now.monthly > before.monthly {
                add(.mrrExpansion, now.monthly - before.monthly, now, currency: now.currency)
            } else if now.monthly < before.monthly {
                add(.mrrContraction, now.monthly - before.monthly, now, currency: now.currency)
            }
        }
        let isTrial = now.status.grantsAccess && now.trial
        if isTrial && !wasTrial { add(.trialsNew, 1, now) }
        if wasTrial, let before, now.paid { add(.trialsConverted, 1, before) }
    }
    for (id, before) in previous {
        let now = current[id]
        if before.paid && !(now?.paid ?? false) {
            add(.activesChurned, 1, before)
            add(.mrrChurned, -before.monthly, before, currency: before.currency)
        }
        let wasTrial = before.status.grantsAccess && before.trial
        let stillTrial = now.map { $0.status.grantsAccess && $0.trial } ?? false
        if wasTrial && !stillTrial && !(now?.paid ?? false) { add(.trialsExpired, 1, before) }
    }
}

/// Revenue, refunds and the cohort series, from the newest version of each transaction and the
/// `play` periods (``playPeriods(_:policy:)``): one customer's cohort spans both stores. A Play
/// purchase's refunds by quantity take back their share of its price when they happened.
func chartTransactionFlows(_ facts: [Fact], play: [PlayPeriod] = [], environment: Environment, into sums: inout [ChartKey: Int64]) {
    var latest: [String: TransactionFact] = [:]
    for case .transaction(let t) in facts where latest[t.transactionId].map({ $0.signedDate <= t.signedDate }) ?? true {
        latest[t.transactionId] = t
    }
    let playIds = Set(play.map(\.transaction.transactionId))
    var partialRefunds: [String: [(at: Int64, amount: Int64)]] = [:]
    for period in play where latest[period.transaction.transactionId] == nil {
        latest[period.transaction.transactionId] = period.transaction
        if !period.partialRefunds.isEmpty { partialRefunds[period.transaction.transactionId] = period.partialRefunds }
    }
    func store(_ t: TransactionFact) -> PurchaseStore { playIds.contains(t.transactionId) ? .playStore : .appStore }
    let transactions = latest.values.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
    guard let first = transactions.first else { return }
    func add(_ kind: ChartKind, _ instant: Int64, _ value: Int64, _ t: TransactionFact?, currency: String = "", offset: Int64 = 0) {
        guard value != 0 else { return }
        let segment = ChartSegment(t, store: t.map(store) ?? .appStore)
        let key = ChartKey(environment: environment, day: metricDay(instant), kind: kind, currency: currency, segment: segment, offset: offset)
        sums[key, default: 0] += value
    }
    let paid = transactions.filter(\.isPaid)
    var firstPaid: [String: TransactionFact] = [:]
    for t in paid where firstPaid[t.originalTransactionId] == nil { firstPaid[t.originalTransactionId] = t }
    for t in paid {
        guard let currency = t.currency, let price = t.price else { continue }
        add(.revenue, t.purchaseDate, price, t, currency: currency)
        let start = firstPaid[t.originalTransactionId]?.purchaseDate ?? t.purchaseDate
        let commission = storeCommission(store(t), productType: t.productType, paidFor: t.purchaseDate - start)
        add(.proceeds, t.purchaseDate, price * (100 - commission) / 100, t, currency: currency)
        add(.paidTransactions, t.purchaseDate, 1, t)
        let partial = partialRefunds[t.transactionId] ?? []
        for refund in partial { add(.refundAmount, refund.at, refund.amount, t, currency: currency) }
        if let revoked = t.revocationDate, t.isRefunded {
            add(.refundAmount, revoked, price - partial.reduce(0) { $0 + $1.amount }, t, currency: currency)
            add(.refunds, revoked, 1, t)
            add(.refundedTransactions, t.purchaseDate, 1, t)
        }
    }
    // The customer's cohort: the day of their first transaction in the environment.
    add(.customersNew, first.purchaseDate, 1, first)
    let kept = paid.filter { !$0.isRefunded }
    if !kept.isEmpty { add(.customersPaying, first.purchaseDate, 1, first) }
    for t in kept {
        let refunded = partialRefunds[t.transactionId]?.reduce(0) { $0 + $1.amount } ?? 0
        add(.customerRevenue, first.purchaseDate, (t.price ?? 0) - refunded, first, currency: t.currency ?? "")
    }
    // Trials: each subscription's first free-trial transaction.
    var trialed = Set<String>()
    for t in transactions where t.periodType == .trial && t.productType == .autoRenewable && trialed.insert(t.originalTransactionId).inserted {
        add(.trialStarts, t.purchaseDate, 1, t)
        if paid.contains(where: { $0.originalTransactionId == t.originalTransactionId && $0.purchaseDate >= t.purchaseDate }) {
            add(.trialConversions, t.purchaseDate, 1, t)
        }
    }
    // Retention: from each subscription's first paid transaction, the months a paid one covers.
    for (id, start) in firstPaid where start.productType == .autoRenewable {
        add(.subscriptionStarts, start.purchaseDate, 1, start)
        let own = kept.filter { $0.originalTransactionId == id }
        let end = own.compactMap(\.expiresDate).max() ?? start.purchaseDate
        var k: Int64 = 0
        while k <= maxRetentionMonths {
            let instant = ISODuration(months: Int(k)).added(to: start.purchaseDate)
            guard instant < end else { break }
            if own.contains(where: { $0.purchaseDate <= instant && instant < ($0.expiresDate ?? 0) }) {
                add(.subscriptionRetained, start.purchaseDate, 1, start, offset: k)
            }
            k += 1
        }
    }
}
