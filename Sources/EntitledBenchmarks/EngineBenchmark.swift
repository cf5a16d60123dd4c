import AppStoreTesting
import Entitlements

/// `entitled bench engine`: cost of one `evaluate(facts:policy:now:)` as a customer's history grows.
public enum EngineBenchmark {
    /// Runs the benchmark for `seconds` per size, printing its figures; false when the cost grows
    /// faster than linearly or is not well under a millisecond at 1,000 facts.
    public static func run(seconds: Double) async throws -> Bool {

        let sizes = [10, 100, 1_000]
        print("entitled bench engine: evaluate(facts:policy:now:), one customer, \(seconds) s per size")
        print("facts".padding(toLength: 8, withPad: " ", startingAt: 0)
            + "iterations".padding(toLength: 13, withPad: " ", startingAt: 0)
            + "µs/eval".padding(toLength: 11, withPad: " ", startingAt: 0)
            + "(mean)".padding(toLength: 12, withPad: " ", startingAt: 0) + "ns/fact")
        var perEval: [Int: Double] = [:]
        var sink = 0
        for size in sizes {
            let (facts, now) = customer(facts: size)
            // Warm up (and check the engine agrees the customer is subscribed).
            let warm = evaluate(facts: facts, policy: benchPolicy, now: now)
            guard warm.entitlement("pro")?.active == true else {
                throw BenchmarkError("benchmark customer with \(size) facts is not active; the fixture is wrong")
            }
            let clock = ContinuousClock()
            var iterations = 0
            let budget = Duration.milliseconds(Int64(seconds * 1_000))
            let start = clock.now
            var elapsed = Duration.zero
            // Batches of about 20,000 facts keep clock reads out of the measured cost; the fastest
            // batch is reported beside the mean, because other processes share the cores.
            let batch = max(1, 20_000 / size)
            var fastest = Double.infinity
            while elapsed < budget {
                let batchStart = clock.now
                for _ in 0..<batch {
                    let state = evaluate(facts: facts, policy: benchPolicy, now: now)
                    sink &+= state.entitlements.count &+ state.proceeds.count
                }
                fastest = min(fastest, micros(clock.now - batchStart) / Double(batch))
                iterations += batch
                elapsed = clock.now - start
            }
            let mean = micros(elapsed) / Double(iterations)
            perEval[size] = fastest
            print(String(size).padding(toLength: 8, withPad: " ", startingAt: 0)
                + String(iterations).padding(toLength: 13, withPad: " ", startingAt: 0)
                + format(fastest, 2).padding(toLength: 11, withPad: " ", startingAt: 0)
                + format(mean, 2).padding(toLength: 12, withPad: " ", startingAt: 0)
                + format(fastest * 1_000 / Double(size), 1))
        }
        guard let small = perEval[10], let medium = perEval[100], let large = perEval[1_000] else { return false }
        let growth = (large / 1_000) / (small / 10)
        let growthMid = (medium / 100) / (small / 10)
        let linear = growth <= 1.0
        let wellUnder = large < 250  // a quarter of a millisecond
        print("growth: time ×\(format(medium / small, 1)) from 10 to 100 facts, ×\(format(large / medium, 1)) from 100 to 1,000")
        print("per-fact cost vs 10 facts: \(format(growthMid, 2))× at 100, \(format(growth, 2))× at 1,000"
            + " → growth at most linear: \(linear ? "yes" : "NO")")
        print("1,000 facts: \(format(large, 1)) µs per evaluation → well under 1 ms (< 250 µs): \(wellUnder ? "yes" : "NO")")
        if sink == 42 { print("") }  // keeps the results observable
        return linear && wellUnder
    }

    static let benchPolicy = Policy(
        products: [
            "monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium", level: 2),
            "monthly.plus": ProductPolicy(
                type: .autoRenewable, entitlements: ["pro", "plus"], subscriptionGroup: "premium", level: 1),
            "lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["pro"]),
        ],
        fallbackGraceDays: 16)

    /// A customer with exactly `count` facts: per monthly period a transaction, a renewal info and a
    /// DID_RENEW notification (the first period: SUBSCRIBED), every tenth period also an auto-renew
    /// toggle pair; the last 2% repeat earlier facts (Apple retries); shuffled with a fixed seed.
    static func customer(facts count: Int) -> ([Fact], Int64) {
        let start = Time.millis(year: 2001, month: 1, day: 1)
        var facts: [Fact] = []
        facts.reserveCapacity(count)
        let unique = count - count / 50
        var period = 0
        var purchase = start
        while facts.count < unique {
            let expires = ISODuration(months: 1).added(to: purchase)
            let id = "2000000\(100_000 + period)"
            facts.append(
                .transaction(
                    TransactionFact(
                        transactionId: id, originalTransactionId: "2000000100000", webOrderLineItemId: "w\(id)",
                        productId: "monthly", subscriptionGroupId: "21000001", purchaseDate: purchase,
                        originalPurchaseDate: start, expiresDate: expires, productType: .autoRenewable,
                        signedDate: purchase + 1_000, environment: .production, storefront: "USA",
                        transactionReason: period == 0 ? .purchase : .renewal, price: 9_990, currency: "USD")))
            facts.append(
                .renewalInfo(
                    RenewalInfoFact(
                        originalTransactionId: "2000000100000", productId: "monthly", autoRenewProductId: "monthly",
                        autoRenewStatus: true, isInBillingRetryPeriod: false, signedDate: purchase + 1_000,
                        renewalDate: expires, recentSubscriptionStartDate: start)))
            facts.append(
                .notification(
                    NotificationFact(
                        type: period == 0 ? .subscribed : .didRenew, subtype: period == 0 ? .initialBuy : nil,
                        notificationUUID: "uuid-\(period)", signedDate: purchase + 2_000,
                        originalTransactionId: "2000000100000", transactionId: id)))
            if period % 10 == 9 {
                facts.append(
                    .notification(
                        NotificationFact(
                            type: .didChangeRenewalStatus, subtype: .autoRenewDisabled, notificationUUID: "off-\(period)",
                            signedDate: purchase + Time.day, originalTransactionId: "2000000100000")))
                facts.append(
                    .notification(
                        NotificationFact(
                            type: .didChangeRenewalStatus, subtype: .autoRenewEnabled, notificationUUID: "on-\(period)",
                            signedDate: purchase + 2 * Time.day, originalTransactionId: "2000000100000")))
            }
            purchase = expires
            period += 1
        }
        facts.removeLast(facts.count - unique)
        // Seeded, so every run measures the same arrival order.
        var generator = SplitMix64(seed: UInt64(count))
        while facts.count < count { facts.append(facts[Int(generator.next() % UInt64(unique))]) }
        facts.shuffle(using: &generator)
        // `now`: a day into the newest period that has a transaction.
        let newest = facts.compactMap { fact -> Int64? in
            if case .transaction(let t) = fact { return t.purchaseDate }
            return nil
        }.max() ?? start
        return (facts, newest + Time.day)
    }

    private static func micros(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }

    private static func format(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = String(rounded)
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
        }
        return text
    }
}
