import AppStore
import AppStoreSimulator
import Entitlements
import Testing

/// The transaction series of the charts, counted from Apple's own record of every customer's
/// transactions (the simulator's), without the ledger or the chart code.
extension ChartAnswersTests {
    /// Whether Apple charged for the transaction: a price, outside a free trial.
    static func isPaid(_ t: JWSTransactionDecodedPayload) -> Bool {
        (t.price ?? 0) > 0 && t.currency != nil && !(t.offerType == .introductoryOffer && t.offerDiscountType == .freeTrial)
    }

    /// Whether Apple refunded it (an upgraded transaction is revoked without a refund).
    static func isRefunded(_ t: JWSTransactionDecodedPayload) -> Bool { t.revocationDate != nil && t.isUpgraded != true }

    /// Whether a paid transaction of the subscription was bought before this one (a return to
    /// paid access rather than its first).
    static func paidBefore(_ transactionId: String, of otid: String, in transactions: [JWSTransactionDecodedPayload]) -> Bool {
        let purchase = transactions.first { $0.transactionId == transactionId }?.purchaseDate ?? .max
        return transactions.contains { $0.originalTransactionId == otid && isPaid($0) && ($0.purchaseDate ?? .max) < purchase }
    }

    /// Per day index: money per currency (milli-units) and counts.
    struct Flows {
        var gross: [Int: [String: Int64]] = [:]
        var proceeds: [Int: [String: Int64]] = [:]
        var refunds: [Int: [String: Int64]] = [:]
        var transactions: [Int: Int] = [:]
        var refunded: [Int: Int] = [:]
        var customers: [Int: Int] = [:]
        var paying: [Int: Int] = [:]
        /// By the customers' cohort day: the prices of their paid transactions not refunded.
        var customerRevenue: [Int: [String: Int64]] = [:]
    }

    /// `segment`: what the money of a transaction is keyed by besides its currency
    /// (`"USA EUR"` for `{ $0.storefront }`); nil: the currency alone.
    static func flows(_ snapshot: StateSnapshot, firstDay: Int64, segment: ((JWSTransactionDecodedPayload) -> String)? = nil) -> Flows {
        var flows = Flows()
        func index(_ instant: Int64?) -> Int { Int(metricDay(instant ?? 0) - firstDay) }
        let owner = Dictionary(snapshot.subscriptions.map { ($0.originalTransactionId, $0.customerId) }) { a, _ in a }
        var first: [String: Int64] = [:], paying = Set<String>(), kept: [(customer: String, price: Int64, currency: String)] = []
        for t in snapshot.transactions {
            guard let customer = t.originalTransactionId.flatMap({ owner[$0] }), let purchase = t.purchaseDate else { continue }
            first[customer] = min(first[customer] ?? .max, purchase)
            guard isPaid(t), let price = t.price, let currency = t.currency else { continue }
            let day = index(purchase), key = segment.map { "\($0(t)) \(currency)" } ?? currency
            flows.gross[day, default: [:]][key, default: 0] += price
            // Every subscription here is in its first paid year: the App Store keeps 30 %.
            flows.proceeds[day, default: [:]][key, default: 0] += price * 70 / 100
            flows.transactions[day, default: 0] += 1
            if isRefunded(t) {
                flows.refunds[index(t.revocationDate), default: [:]][key, default: 0] += price
                flows.refunded[day, default: 0] += 1
            } else {
                paying.insert(customer)
                kept.append((customer, price, currency))
            }
        }
        for (customer, purchase) in first {
            flows.customers[index(purchase), default: 0] += 1
            if paying.contains(customer) { flows.paying[index(purchase), default: 0] += 1 }
        }
        for t in kept { flows.customerRevenue[index(first[t.customer]), default: [:]][t.currency, default: 0] += t.price }
        return flows
    }

    /// Gross less refunds, per day and key.
    static func net(_ flows: Flows) -> [Int: [String: Int64]] {
        var net = flows.gross
        for (day, amounts) in flows.refunds { for (key, amount) in amounts { net[day, default: [:]][key, default: 0] -= amount } }
        return net
    }
}

extension ChartAnswersTests {
    /// Records every day whose chart values (zeros left out) differ from the answers'.
    static func check(_ label: String, _ got: [Int: [String: Double]], _ expected: [Day], _ want: (Day) -> [String: Double]) {
        for (index, day) in expected.enumerated() {
            let have = (got[index] ?? [:]).filter { $0.value != 0 }, need = want(day).filter { $0.value != 0 }
            if have != need { Issue.record("\(label) day \(index): answers \(need), chart \(have)") }
        }
    }

    /// Records every day index whose values (zeros left out) differ from those wanted by more than
    /// `tolerance` of their size (values computed alike are exact: 0).
    static func compare(_ label: String, _ got: [Int: [String: Double]], _ want: [Int: [String: Double]], days: Int, tolerance: Double = 0) {
        for index in 0..<days {
            let have = (got[index] ?? [:]).filter { $0.value != 0 }, need = (want[index] ?? [:]).filter { $0.value != 0 }
            let same = Set(have.keys) == Set(need.keys)
                && need.allSatisfy { key, value in abs(have[key]! - value) <= tolerance * max(1, abs(value)) }
            if !same { Issue.record("\(label) day \(index): transactions \(need), chart \(have)") }
        }
    }

    /// Money per currency in milli-units, as the chart's units compare with them.
    static func milli(_ values: [String: Double]) -> [String: Double] { values.mapValues { ($0 * 1000).rounded() } }

    /// The charts not compared with the day-end counts: ARR, actives by store and period type, the
    /// MRR movement's parts, churn's base, and the transaction series (revenue, refund rate,
    /// conversion to paying) against Apple's record of the transactions.
    static func compareMore(
        world: SimulatorEndToEndTests.World, firstDay: Int64, expected: [Day],
        chart: (String, String?) async throws -> [[String: Any]]
    ) async throws {
        func money(_ points: [[String: Any]], _ name: String) -> [Int: [String: Double]] {
            series(points, name, firstDay: firstDay, currency: true).mapValues(milli)
        }
        func ints(_ values: [String: Int]) -> [String: Double] { values.mapValues(Double.init) }
        func doubles(_ values: [String: Int64]) -> [String: Double] { values.mapValues(Double.init) }
        let arr = try await chart("arr", nil)
        check("arr", money(arr, "arr"), expected) { $0.mrr.mapValues { Double($0 * 12) } }
        let byStore = try await chart("actives", "store")
        check("actives by store", series(byStore, "actives", firstDay: firstDay), expected) {
            ["appStore": Double($0.actives.values.reduce(0, +))]
        }
        let byPeriod = try await chart("actives", "periodType")
        check("actives by period type", series(byPeriod, "actives", firstDay: firstDay), expected) { ints($0.activesByPeriodType) }
        let moves = try await chart("mrr_movement", nil)
        check("mrr new", money(moves, "new"), expected) { doubles($0.mrrNew) }
        check("mrr reactivated", money(moves, "reactivated"), expected) { doubles($0.mrrReactivated) }
        check("mrr expansion", money(moves, "expansion"), expected) { doubles($0.mrrExpansion) }
        check("mrr contraction", money(moves, "contraction"), expected) { doubles($0.mrrContraction) }
        check("mrr churned", money(moves, "churned"), expected) { doubles($0.mrrChurned) }
        let churn = try await chart("churn", nil)
        check("actives at start (churn)", series(churn, "activesAtStart", firstDay: firstDay), expected.indices.map { index in
            index == 0 ? Day() : expected[index - 1]
        }) { ["": Double($0.actives.values.reduce(0, +))] }

        let flows = Self.flows(await world.simulator.snapshot(), firstDay: firstDay)
        func compare(_ label: String, _ got: [Int: [String: Double]], _ want: [Int: [String: Double]]) {
            Self.compare(label, got, want, days: expected.count)
        }
        func total(_ values: [Int: Int]) -> [Int: [String: Double]] { values.mapValues { ["": Double($0)] } }
        let revenue = try await chart("revenue", nil)
        compare("gross", money(revenue, "gross"), flows.gross.mapValues(doubles))
        compare("proceeds", money(revenue, "proceeds"), flows.proceeds.mapValues(doubles))
        compare("refunds", money(revenue, "refunds"), flows.refunds.mapValues(doubles))
        compare("net", money(revenue, "net"), net(flows).mapValues(doubles))
        let refundRate = try await chart("refund_rate", nil)
        compare("paid transactions", series(refundRate, "transactions", firstDay: firstDay), total(flows.transactions))
        compare("refunded transactions", series(refundRate, "refunded", firstDay: firstDay), total(flows.refunded))
        let conversion = try await chart("conversion_to_paying", nil)
        compare("customers (conversion)", series(conversion, "customers", firstDay: firstDay), total(flows.customers))
        compare("paying customers", series(conversion, "paying", firstDay: firstDay), total(flows.paying))
        // The transactions are not trivial: three currencies, refunds, paying customers.
        #expect(Set(flows.gross.values.flatMap(\.keys)).count == 3)
        #expect(!flows.refunded.isEmpty && !flows.refunds.isEmpty)
        #expect(!flows.paying.isEmpty)
    }
}
