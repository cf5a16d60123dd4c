// An experiment's results: what each enrolled customer did within 7, 30 and 90 days of their
// enrolment, read from their App Store and Google Play purchases alike, summed per variant with
// 95 % intervals.

/// What one enrolled customer did between their enrolment and a horizon, from their purchases in
/// both stores (``CountedPurchase``) in the environments counted.
public struct ExperimentOutcome: Hashable, Sendable {
    /// A free trial of an auto-renewable subscription started in the window.
    public var trialStarted = false
    /// Such a trial was followed, in the window, by a paid purchase of the same subscription.
    public var trialConverted = false
    /// A paid purchase (a price above zero, outside a free trial) was bought in the window.
    public var paid = false
    /// The prices of the paid purchases bought in the window, per currency (milli-units).
    public var revenue: [String: Int64] = [:]
    /// ``revenue`` less the purchases refunded by the window's end.
    public var realizedRevenue: [String: Int64] = [:]

    public init() {}

    /// The outcome of the window `enrolledAt...until` (epoch ms, inclusive).
    public init(facts: [Fact], environments: Set<Environment>, enrolledAt: Int64, until: Int64) {
        self.init(purchases: CountedPurchase.all(facts, environments: environments), enrolledAt: enrolledAt, until: until)
    }

    init(purchases: [CountedPurchase], enrolledAt: Int64, until: Int64) {
        let window = purchases.filter { (enrolledAt...until).contains($0.purchaseDate) }
        let paid = window.filter(\.paid)
        for t in window where t.freeTrial {
            trialStarted = true
            if paid.contains(where: { $0.subscription == t.subscription && $0.purchaseDate >= t.purchaseDate }) {
                trialConverted = true
            }
        }
        self.paid = !paid.isEmpty
        for t in paid {
            guard let currency = t.currency, let price = t.price else { continue }
            revenue[currency, default: 0] += price
            if (t.refundedAt ?? .max) > until { realizedRevenue[currency, default: 0] += price }
        }
    }
}

/// One purchase as an experiment's results count it, whichever store sold it: the App Store's
/// transactions and Google Play's periods reduced to the same few fields, so that both count alike.
struct CountedPurchase {
    /// The subscription it belongs to (per store): a trial converts when a paid purchase of the
    /// same subscription follows it.
    var subscription: String
    var purchaseDate: Int64
    /// The first period of an auto-renewable subscription, free.
    var freeTrial: Bool
    /// Bought for money: outside a free trial, at a price above zero (a Play period whose price
    /// is not known counts, without revenue).
    var paid: Bool
    /// Milli-units of ``currency``.
    var price: Int64?
    var currency: String?
    /// When it was refunded, if it was.
    var refundedAt: Int64?

    /// Every purchase of both stores in `environments`.
    static func all(_ facts: [Fact], environments: Set<Environment>) -> [CountedPurchase] {
        appStore(facts, environments: environments) + playStore(facts, environments: environments)
    }

    /// The App Store's: the newest version of each transaction.
    static func appStore(_ facts: [Fact], environments: Set<Environment>) -> [CountedPurchase] {
        var latest: [String: TransactionFact] = [:]
        for case .transaction(let t) in facts where environments.contains(t.environment) {
            if latest[t.transactionId].map({ $0.signedDate <= t.signedDate }) ?? true { latest[t.transactionId] = t }
        }
        return latest.values.map { t in
            CountedPurchase(
                subscription: PurchaseStore.appStore.rawValue + ":" + t.originalTransactionId, purchaseDate: t.purchaseDate,
                freeTrial: t.periodType == .trial && t.productType == .autoRenewable, paid: t.isPaid, price: t.price,
                currency: t.currency, refundedAt: t.isRefunded ? t.revocationDate ?? .max : nil)
        }
    }

    /// Google Play's: each order of a subscription and each one-time purchase, priced and refunded
    /// as the charts count them (``playPeriods``). A period whose price Google did not give (an
    /// introductory phase) is still a paid conversion, without revenue.
    static func playStore(_ facts: [Fact], environments: Set<Environment>) -> [CountedPurchase] {
        environments.sorted(by: { $0.rawValue < $1.rawValue }).flatMap { environment in
            playPeriods(facts.filter { $0.environment == environment }, policy: Policy()).map { period in
                let t = period.transaction
                let trial = t.periodType == .trial && t.productType == .autoRenewable
                return CountedPurchase(
                    subscription: PurchaseStore.playStore.rawValue + ":" + t.originalTransactionId, purchaseDate: t.purchaseDate,
                    freeTrial: trial, paid: !trial && (t.price ?? 1) > 0, price: t.price, currency: t.currency,
                    refundedAt: t.isRefunded ? t.revocationDate ?? .max : nil)
            }
        }
    }
}

/// A proportion with its 95 % Wilson score interval.
public struct ProportionEstimate: Hashable, Sendable {
    public var count: Int
    /// `count / customers` (0 without customers).
    public var rate: Double
    public var low: Double
    public var high: Double

    /// `successes` of `trials`, with Wilson's interval (`z` = 1.96): good at small counts and
    /// rates near 0 or 1, where the normal approximation is not.
    public init(successes: Int, trials: Int) {
        count = successes
        guard trials > 0 else {
            (rate, low, high) = (0, 0, 1)
            return
        }
        let n = Double(trials)
        let p = Double(successes) / n
        let z = ExperimentStatistics.z
        let denominator = 1 + z * z / n
        let centre = (p + z * z / (2 * n)) / denominator
        let half = z * (p * (1 - p) / n + z * z / (4 * n * n)).squareRoot() / denominator
        (rate, low, high) = (p, max(0, centre - half), min(1, centre + half))
    }
}

/// A mean per customer in one currency with its 95 % normal interval.
public struct MeanEstimate: Hashable, Sendable {
    public var currency: String
    /// The sum over the customers (milli-units).
    public var total: Int64
    /// The mean per customer (milli-units), every observed customer counted (0 when they paid nothing).
    public var mean: Double
    public var low: Double
    public var high: Double
}

/// How the results are computed: the horizons, the threshold below which a variant's horizon has
/// not enough data, the interval's `z`.
public enum ExperimentStatistics {
    /// The days after enrolment each result is read at.
    public static let horizonDays: [Int] = [7, 30, 90]
    /// Below this many customers observed at a horizon, a variant has not enough data there.
    public static let minimumCustomers = 100
    /// The two-sided 95 % normal quantile.
    public static let z = 1.959964
}

/// One variant's results at one horizon.
public struct VariantHorizonResult: Hashable, Sendable {
    public var days: Int
    /// The customers enrolled at least ``days`` ago: the only ones counted here.
    public var customers: Int
    /// Whether ``customers`` reaches ``ExperimentStatistics/minimumCustomers``.
    public var enoughData: Bool
    public var trialsStarted: ProportionEstimate
    public var trialConversions: ProportionEstimate
    public var paidConversions: ProportionEstimate
    /// Per currency, sorted by currency.
    public var revenuePerCustomer: [MeanEstimate]
    public var realizedRevenuePerCustomer: [MeanEstimate]
}

/// Sums enrolled customers' outcomes per variant and horizon, one customer at a time (the
/// customers' facts need not be held together).
public struct ExperimentTally: Sendable {
    struct Sums: Sendable {
        var customers = 0
        var trials = 0
        var conversions = 0
        var paid = 0
        /// Per currency: the sum and the sum of squares of each customer's amount.
        var revenue: [String: (sum: Double, squares: Double, total: Int64)] = [:]
        var realized: [String: (sum: Double, squares: Double, total: Int64)] = [:]
    }

    public let variantCount: Int
    public let now: Int64
    /// Enrolled customers per variant, whatever their horizon.
    public private(set) var customers: [Int]
    var sums: [[Sums]]

    public init(variantCount: Int, now: Int64) {
        self.variantCount = variantCount
        self.now = now
        customers = Array(repeating: 0, count: variantCount)
        sums = Array(repeating: Array(repeating: Sums(), count: ExperimentStatistics.horizonDays.count), count: variantCount)
    }

    /// Counts one customer enrolled in `variant` at `enrolledAt`, with their facts; a horizon not
    /// reached yet (`enrolledAt` + days after `now`) does not count them.
    public mutating func add(variant: Int, enrolledAt: Int64, facts: [Fact], environments: Set<Environment>) {
        guard sums.indices.contains(variant) else { return }
        customers[variant] += 1
        let purchases = CountedPurchase.all(facts, environments: environments)
        for (index, days) in ExperimentStatistics.horizonDays.enumerated() {
            let until = enrolledAt + Int64(days) * Time.day
            guard until <= now else { continue }
            let outcome = ExperimentOutcome(purchases: purchases, enrolledAt: enrolledAt, until: until)
            var s = sums[variant][index]
            s.customers += 1
            if outcome.trialStarted { s.trials += 1 }
            if outcome.trialConverted { s.conversions += 1 }
            if outcome.paid { s.paid += 1 }
            for (currency, amount) in outcome.revenue { Self.accumulate(&s.revenue, currency, amount) }
            for (currency, amount) in outcome.realizedRevenue { Self.accumulate(&s.realized, currency, amount) }
            sums[variant][index] = s
        }
    }

    static func accumulate(_ sums: inout [String: (sum: Double, squares: Double, total: Int64)], _ currency: String, _ amount: Int64) {
        var entry = sums[currency] ?? (0, 0, 0)
        entry.sum += Double(amount)
        entry.squares += Double(amount) * Double(amount)
        entry.total += amount
        sums[currency] = entry
    }

    /// Each variant's results, horizon by horizon (``ExperimentStatistics/horizonDays``).
    public func results() -> [[VariantHorizonResult]] {
        sums.map { horizons in
            zip(ExperimentStatistics.horizonDays, horizons).map { days, s in
                VariantHorizonResult(
                    days: days, customers: s.customers, enoughData: s.customers >= ExperimentStatistics.minimumCustomers,
                    trialsStarted: ProportionEstimate(successes: s.trials, trials: s.customers),
                    trialConversions: ProportionEstimate(successes: s.conversions, trials: s.customers),
                    paidConversions: ProportionEstimate(successes: s.paid, trials: s.customers),
                    revenuePerCustomer: Self.means(s.revenue, customers: s.customers),
                    realizedRevenuePerCustomer: Self.means(s.realized, customers: s.customers))
            }
        }
    }

    /// The mean per customer and its normal interval, `mean ± z·s/√n` (`s` the sample standard
    /// deviation; a single customer's interval is the point).
    static func means(_ sums: [String: (sum: Double, squares: Double, total: Int64)], customers n: Int) -> [MeanEstimate] {
        guard n > 0 else { return [] }
        return sums.keys.sorted().map { currency in
            let entry = sums[currency]!
            let mean = entry.sum / Double(n)
            let variance = n > 1 ? max(0, (entry.squares - entry.sum * entry.sum / Double(n)) / Double(n - 1)) : 0
            let half = ExperimentStatistics.z * (variance / Double(n)).squareRoot()
            return MeanEstimate(currency: currency, total: entry.total, mean: mean, low: max(0, mean - half), high: mean + half)
        }
    }
}
