import AppStore
import AppStoreSimulator
import Entitlements
import Foundation
import Testing

/// Retention, realized LTV and revenue by segment, counted from Apple's record of every
/// transaction (the simulator's) by the definitions docs/charts.md writes, without the ledger or
/// the chart code.
extension ChartAnswersTests {
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// `instant` (epoch milliseconds) plus `months` calendar months, by Foundation's calendar (a
    /// day the month lacks becomes its last).
    static func adding(months: Int, to instant: Int64) -> Int64 {
        let date = utc.date(byAdding: .month, value: months, to: Date(timeIntervalSince1970: Double(instant) / 1000))!
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The period type a transaction was bought with, as the `periodType` segment names it.
    static func periodType(_ t: JWSTransactionDecodedPayload) -> String {
        guard let offer = t.offerType else { return "normal" }
        if offer == .introductoryOffer { return t.offerDiscountType == .freeTrial ? "trial" : "intro" }
        let names: [(AppStore.OfferType, String)] = [
            (.promotionalOffer, "promotional"), (.offerCode, "offerCode"), (.winBackOffer, "winBack"), (.retentionOffer, "retentionOffer"),
        ]
        return names.first { $0.0 == offer }?.1 ?? "normal"
    }

    /// The transaction's value of a segmentation (every transaction here is the App Store's).
    static func segmentValue(_ segmentation: String, _ t: JWSTransactionDecodedPayload) -> String {
        switch segmentation {
        case "store": "appStore"
        case "product": t.productId ?? ""
        case "storefront": t.storefront ?? ""
        default: periodType(t)
        }
    }

    /// The chart's periods over `days` days from `firstDay`: each day, or the calendar months cut
    /// at the range's ends.
    static func periods(firstDay: Int64, days: Int, monthly: Bool) -> [(start: Int64, end: Int64)] {
        var periods: [(start: Int64, end: Int64)] = []
        for day in firstDay..<(firstDay + Int64(days)) {
            let month = utc.dateComponents([.year, .month], from: Date(timeIntervalSince1970: Double(day) * 86_400))
            if monthly, let last = periods.last,
               utc.dateComponents([.year, .month], from: Date(timeIntervalSince1970: Double(last.start) * 86_400)) == month
            {
                periods[periods.count - 1].end = day
            } else {
                periods.append((day, day))
            }
        }
        return periods
    }

    /// `subscription_retention` by its definition: per cohort period (by the day index of its first
    /// day), the subscriptions whose first paid transaction was in it and, for each month k whose
    /// period end + k months is `today` or earlier, the share of them a paid, unrefunded
    /// transaction of the subscription covers (purchase ≤ t < expiry) at t = first paid purchase
    /// + k months.
    static func retention(
        _ snapshot: StateSnapshot, periods: [(start: Int64, end: Int64)], firstDay: Int64, today: Int64
    ) -> [Int: [String: Double]] {
        let day: Int64 = 86_400_000
        let subscriptions = Dictionary(grouping: snapshot.transactions.filter { $0.type == .autoRenewableSubscription }) {
            $0.originalTransactionId ?? ""
        }
        var starts: [Int: Int] = [:], retained: [Int: [Int: Int]] = [:]
        for own in subscriptions.values {
            let paid = own.filter(isPaid)
            guard let start = paid.compactMap(\.purchaseDate).min(),
                  let cohort = periods.firstIndex(where: { $0.start...$0.end ~= metricDay(start) })
            else { continue }
            starts[cohort, default: 0] += 1
            let kept = paid.filter { !isRefunded($0) }
            var k = 0
            while metricDay(adding(months: k, to: periods[cohort].end * day)) <= today {
                let t = adding(months: k, to: start)
                let covered = kept.contains { ($0.purchaseDate ?? .max) <= t && t < ($0.expiresDate ?? 0) }
                retained[cohort, default: [:]][k, default: 0] += covered ? 1 : 0
                k += 1
            }
        }
        var result: [Int: [String: Double]] = [:]
        for (cohort, size) in starts {
            var values = ["subscriptions": Double(size)]
            for (k, count) in retained[cohort] ?? [:] { values["month_\(k)"] = Double(count) / Double(size) }
            result[Int(periods[cohort].start - firstDay)] = values
        }
        return result
    }

    /// A cohort chart's every series by day index, zeros kept (a month shown at 0 % is a value).
    static func cohortTable(_ points: [[String: Any]], firstDay: Int64) -> [Int: [String: Double]] {
        var result: [Int: [String: Double]] = [:]
        for point in points {
            guard let date = point["date"] as? String, let series = point["series"] as? String, let value = point["value"] as? Double
            else { continue }
            result[Int(days(date) - firstDay), default: [:]][series] = value
        }
        return result
    }

    /// Retention (by day and by month), realized LTV per customer and per paying customer, and
    /// revenue split by, and filtered to, each segment, against the transactions.
    static func compareCohorts(
        world: SimulatorEndToEndTests.World, firstDay: Int64, days: Int, read: (_ chart: String, _ query: String) async throws -> [[String: Any]]
    ) async throws {
        let snapshot = await world.simulator.snapshot()
        let today = metricDay(world.simulator.clock.nowMilliseconds())
        for monthly in [false, true] {
            let points = try await read("subscription_retention", monthly ? "interval=month" : "interval=day")
            let want = retention(snapshot, periods: periods(firstDay: firstDay, days: days, monthly: monthly), firstDay: firstDay, today: today)
            let got = cohortTable(points, firstDay: firstDay)
            // Shares to the last bits the JSON reading keeps (JSONSerialization can be an ulp off).
            let same = Set(got.keys) == Set(want.keys) && want.allSatisfy { index, values in
                Set(values.keys) == Set(got[index]!.keys) && values.allSatisfy { abs(got[index]![$0.key]! - $0.value) <= 1e-12 * max(1, abs($0.value)) }
            }
            if !same { Issue.record("retention by \(monthly ? "month" : "day"): transactions \(want), chart \(got)") }
            // Not trivial: cohorts followed into their second month, some lost by then.
            #expect(want.values.contains { $0["month_1"].map { $0 < 1 } ?? false }, "retention by \(monthly ? "month" : "day")")
            #expect(want.values.contains { ($0["month_1"] ?? 0) > 0 }, "retention by \(monthly ? "month" : "day")")
        }

        let flows = Self.flows(snapshot, firstDay: firstDay)
        func perHead(_ heads: [Int: Int]) -> [Int: [String: Double]] {
            var result: [Int: [String: Double]] = [:]
            for (index, amounts) in flows.customerRevenue {
                guard let count = heads[index], count > 0 else { continue }
                result[index] = amounts.mapValues { Double($0) / Double(count) / 1000 }
            }
            return result
        }
        func total(_ values: [Int: Int]) -> [Int: [String: Double]] { values.mapValues { ["": Double($0)] } }
        let ltv = try await read("ltv_per_customer", "interval=day")
        compare("ltv customers", series(ltv, "customers", firstDay: firstDay), total(flows.customers), days: days)
        compare("ltv per customer", series(ltv, "ltv", firstDay: firstDay, currency: true), perHead(flows.customers), days: days, tolerance: 1e-12)
        let paying = try await read("ltv_per_paying_customer", "interval=day")
        compare("ltv paying customers", series(paying, "payingCustomers", firstDay: firstDay), total(flows.paying), days: days)
        compare("ltv per paying customer", series(paying, "ltv", firstDay: firstDay, currency: true), perHead(flows.paying), days: days,
                tolerance: 1e-12)
        #expect(Set(flows.customerRevenue.values.flatMap(\.keys)).count == 3)

        for segmentation in ["store", "product", "storefront", "periodType"] {
            let split = Self.flows(snapshot, firstDay: firstDay) { segmentValue(segmentation, $0) }
            let wanted = [("gross", split.gross), ("proceeds", split.proceeds), ("refunds", split.refunds), ("net", net(split))]
            let points = try await read("revenue", "interval=day&segment=\(segmentation)")
            for (name, want) in wanted {
                let got = series(points, name, firstDay: firstDay) { "\($0["segment"] as? String ?? "") \($0["currency"] as? String ?? "")" }
                compare("revenue \(name) by \(segmentation)", got.mapValues(milli), want.mapValues { $0.mapValues(Double.init) }, days: days)
            }
            // Filtered to the segment value with the most gross: the split's money of that value.
            var byValue: [String: Int64] = [:]
            for amounts in split.gross.values { for (key, amount) in amounts { byValue[String(key.split(separator: " ")[0]), default: 0] += amount } }
            #expect(byValue.count == ["product": 3, "storefront": 4][segmentation, default: 1], "\(segmentation): \(byValue.keys.sorted())")
            let value = try #require(byValue.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.first?.key)
            let filtered = try await read("revenue", "interval=day&\(segmentation)=\(value)")
            for (name, want) in wanted {
                let held = want.mapValues { amounts in
                    Dictionary(uniqueKeysWithValues: amounts.compactMap { key, amount in
                        key.hasPrefix("\(value) ") ? (String(key.dropFirst(value.count + 1)), Double(amount)) : nil
                    })
                }
                compare("revenue \(name) at \(segmentation)=\(value)", series(filtered, name, firstDay: firstDay, currency: true).mapValues(milli),
                        held, days: days)
            }
        }
    }
}
