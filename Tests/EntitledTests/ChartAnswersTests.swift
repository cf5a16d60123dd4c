import AppStore
import AppStoreSimulator
import AppStoreTesting
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// The charts against the customers' own answers: a seeded simulated population (free trials,
/// conversions, upgrades, refunds, billing failures; USD, EUR and JPY products; four
/// storefronts) driven through the real server for 60 virtual days. At the end of each day every
/// customer's answer is read and counted per product (paid access, trials, MRR, the transitions
/// between yesterday's and today's answers and MRR's movement) and paid access per storefront,
/// store and period type; Apple's record of the transactions gives revenue, proceeds, refunds
/// and the purchase and customer cohorts. At the end the charts must give the same numbers for
/// every day.
@Suite struct ChartAnswersTests {
    static let customers = (0..<12).map { "c\($0)" }
    static let storefronts = ["USA", "DEU", "JPN", "GBR"]
    static let days = 60

    /// The demo catalog with the yearly product in EUR and the basic one in JPY.
    static var catalog: Catalog {
        var catalog = Catalog.demo
        for index in catalog.products.indices {
            switch catalog.products[index].id {
            case "pro.yearly": catalog.products[index].currency = "EUR"
            case "basic.monthly":
                catalog.products[index].currency = "JPY"
                catalog.products[index].price = 700_000
            default: break
            }
        }
        return catalog
    }

    /// A product's MRR in milli-units and its currency, as the charts normalize it.
    static func monthly(_ productId: String) -> (Int64, String) {
        switch productId {
        case "pro.monthly": (9990, "USD")
        case "basic.monthly": (700_000, "JPY")
        case "pro.yearly": (99990 / 12, "EUR")
        default: (0, "")
        }
    }

    /// One subscription in one day-end answer.
    struct Standing {
        var product: String
        var paid: Bool
        var trial: Bool
        /// The answer's period type and the transaction behind the standing.
        var periodType = ""
        var transactionId = ""
        /// The customer's storefront (the simulator buys every transaction of a customer there).
        var storefront = ""
    }

    /// What one day's answers say, per product (the charts' segment).
    struct Day: Equatable {
        var actives: [String: Int] = [:]
        var activesByStorefront: [String: Int] = [:]
        var activesByPeriodType: [String: Int] = [:]
        var trials: [String: Int] = [:]
        var mrr: [String: Int64] = [:]  // per currency, milli-units
        var paidStarts: [String: Int] = [:]
        var paidReturns: [String: Int] = [:]
        /// MRR movement per currency, milli-units (churned and contraction negative).
        var mrrNew: [String: Int64] = [:], mrrReactivated: [String: Int64] = [:], mrrExpansion: [String: Int64] = [:]
        var mrrContraction: [String: Int64] = [:], mrrChurned: [String: Int64] = [:]
        var churned: [String: Int] = [:]
        var trialsNew: [String: Int] = [:]
        var trialsConverted: [String: Int] = [:]
        var trialsExpired: [String: Int] = [:]
        var customersNew = 0
    }

    static func standings(_ answer: [String: Any]) -> [String: Standing] {
        var result: [String: Standing] = [:]
        for subscription in answer["subscriptions"] as? [[String: Any]] ?? [] {
            guard let current = subscription["current"] as? [String: Any], let status = current["status"] as? String,
                  let otid = current["originalTransactionId"] as? String
            else { continue }
            let grants = status == "active" || status == "gracePeriod"
            let trial = current["periodType"] as? String == "trial"
            result[otid] = Standing(
                product: current["productId"] as? String ?? "", paid: grants && !trial, trial: grants && trial,
                periodType: current["periodType"] as? String ?? "", transactionId: current["transactionId"] as? String ?? "")
        }
        return result
    }

    /// `transactions`: Apple's record so far, to tell a subscription's first paid access from a return.
    static func count(_ today: [String: Standing], after yesterday: [String: Standing], transactions: [JWSTransactionDecodedPayload]) -> Day {
        var day = Day()
        for (id, now) in today {
            let before = yesterday[id]
            if now.paid {
                day.actives[now.product, default: 0] += 1
                day.activesByStorefront[now.storefront, default: 0] += 1
                day.activesByPeriodType[now.periodType, default: 0] += 1
                let (amount, currency) = monthly(now.product)
                day.mrr[currency, default: 0] += amount
                if let before, before.paid {
                    let (was, wasCurrency) = monthly(before.product)
                    if wasCurrency != currency {
                        day.mrrContraction[wasCurrency, default: 0] -= was
                        day.mrrExpansion[currency, default: 0] += amount
                    } else if amount > was {
                        day.mrrExpansion[currency, default: 0] += amount - was
                    } else if amount < was {
                        day.mrrContraction[currency, default: 0] += amount - was
                    }
                } else if paidBefore(now.transactionId, of: id, in: transactions) {
                    day.paidReturns[now.product, default: 0] += 1
                    day.mrrReactivated[currency, default: 0] += amount
                } else {
                    day.paidStarts[now.product, default: 0] += 1
                    day.mrrNew[currency, default: 0] += amount
                }
            }
            if now.trial {
                day.trials[now.product, default: 0] += 1
                if !(before?.trial ?? false) { day.trialsNew[now.product, default: 0] += 1 }
            }
            if let before, before.trial, now.paid { day.trialsConverted[before.product, default: 0] += 1 }
        }
        for (id, before) in yesterday {
            let now = today[id]
            if before.paid && !(now?.paid ?? false) {
                day.churned[before.product, default: 0] += 1
                let (was, currency) = monthly(before.product)
                day.mrrChurned[currency, default: 0] -= was
            }
            if before.trial && !(now?.trial ?? false) && !(now?.paid ?? false) { day.trialsExpired[before.product, default: 0] += 1 }
        }
        return day
    }

    /// A chart's points (JSON), by day index and segment (or currency), for one series.
    static func series(_ points: [[String: Any]], _ name: String, firstDay: Int64, currency: Bool = false) -> [Int: [String: Double]] {
        series(points, name, firstDay: firstDay) { point in (currency ? point["currency"] : point["segment"]) as? String ?? "" }
    }

    /// A chart's points (JSON), by day index and `key`, for one series (converted money left out).
    static func series(_ points: [[String: Any]], _ name: String, firstDay: Int64, key: ([String: Any]) -> String) -> [Int: [String: Double]] {
        var result: [Int: [String: Double]] = [:]
        for point in points where point["series"] as? String == name && point["converted"] == nil {
            guard let date = point["date"] as? String, let value = point["value"] as? Double else { continue }
            result[Int(days(date) - firstDay), default: [:]][key(point), default: 0] += value
        }
        return result
    }

    static func days(_ date: String) -> Int64 {
        let parts = date.split(separator: "-").compactMap { Int64($0) }
        return Time.daysFromCivil(year: parts[0], month: parts[1], day: parts[2])
    }

    /// SQLite always; PostgreSQL too when `ENTITLED_TEST_POSTGRES` is set.
    @Test(arguments: FrozenDatabaseTests.postgresURL == nil ? [false] : [false, true])
    func chartsEqualTheCustomersAnswersDayByDay(onPostgres: Bool) async throws {
        let postgres = onPostgres ? FrozenDatabaseTests.postgresURL : nil
        try await SimulatorEndToEndTests.run(catalog: Self.catalog, postgres: postgres) { world in
            var random = SplitMix64(seed: 38)
            func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
            try await world.act("advance") { $0.by = "PT4H" }
            try await world.act("gracePeriod") { $0.days = 16 }
            var tokens: [String: String] = [:]
            for (index, id) in Self.customers.enumerated() {
                tokens[id] = try await world.token(id)
                try await world.act("customer") {
                    $0.customer = id
                    $0.storefront = Self.storefronts[index % Self.storefronts.count]
                }
            }
            // Half the customers start with the free trial (once per customer and group); half of
            // those cancel at once, so their trial ends without a payment.
            for (index, id) in Self.customers.enumerated() where index % 2 == 0 {
                try await world.act("purchase") {
                    $0.customer = id
                    $0.product = "pro.monthly"
                    $0.appAccountToken = tokens[id]
                    $0.offer = "intro"
                }
                if index % 4 == 0 { try await world.act("autoRenew") { $0.customer = id; $0.product = "pro.monthly"; $0.enabled = false } }
            }
            let firstDay = metricDay(world.simulator.clock.nowMilliseconds())
            var expected: [Day] = []
            var yesterday: [String: Standing] = [:]
            var seen = Set<String>()
            var trialStart: [String: Int] = [:], converted = Set<String>(), convertedByCohort: [Int: Int] = [:]
            for _ in 0..<Self.days {
                for id in Self.customers {
                    let products = ["pro.monthly", "basic.monthly", "pro.yearly"]
                    let product = products[Int(random.next() % 3)]
                    if chance(12) {
                        _ = try? await world.act("purchase") {
                            $0.customer = id
                            $0.product = product
                            $0.appAccountToken = tokens[id]
                            $0.offer = product == "pro.monthly" && chance(60) ? "intro" : nil
                        }
                    }
                    if chance(4) { _ = try? await world.act("autoRenew") { $0.customer = id; $0.product = product; $0.enabled = chance(50) } }
                    if chance(4) { _ = try? await world.act("paymentMethod") { $0.customer = id; $0.paymentMethod = chance(50) ? "failing" : "ok" } }
                    if chance(2) { _ = try? await world.act("refund") { $0.customer = id; $0.product = product } }
                    if chance(3) { _ = try? await world.act("upgrade") { $0.customer = id; $0.product = "basic.monthly"; $0.to = "pro.monthly" } }
                }
                try await world.act("advance") { $0.by = "PT11H59M59S" }
                var today: [String: Standing] = [:]
                var newCustomers = 0
                for (index, id) in Self.customers.enumerated() {
                    let answer = try await world.customer(id).json
                    let own = Self.standings(answer).mapValues {
                        var standing = $0
                        standing.storefront = Self.storefronts[index % Self.storefronts.count]
                        return standing
                    }
                    if !(answer["subscriptions"] as? [Any] ?? []).isEmpty, seen.insert(id).inserted { newCustomers += 1 }
                    today.merge(own) { a, _ in a }
                }
                // Trial cohorts: the day a subscription's first trial shows, and whether it is
                // seen paid on any later day.
                for (otid, now) in today {
                    if now.trial && trialStart[otid] == nil { trialStart[otid] = expected.count }
                    if now.paid, let start = trialStart[otid], converted.insert(otid).inserted { convertedByCohort[start, default: 0] += 1 }
                }
                var day = Self.count(today, after: yesterday, transactions: await world.simulator.snapshot().transactions)
                day.customersNew = newCustomers
                expected.append(day)
                yesterday = today
                try await world.act("advance") { $0.by = "PT12H0M1S" }
            }
            /// The chart over the 60 days with `query` (interval, segment, filters).
            func read(_ id: String, _ query: String) async throws -> [[String: Any]] {
                let range = "from=\(OverviewDay.format(firstDay))&to=\(OverviewDay.format(firstDay + Int64(Self.days) - 1))&environment=Sandbox"
                let reply = try await Loopback.send(
                    port: world.port, "GET", "/v1/charts/\(id)?\(range)&\(query)", headers: ["Authorization": APIHarness.admin])
                #expect(reply.status == 200, "\(id)?\(query): \(reply.text)")
                return try #require(reply.json["points"] as? [[String: Any]])
            }
            func chart(_ id: String, segment: String? = "product") async throws -> [[String: Any]] {
                try await read(id, "interval=day" + (segment.map { "&segment=\($0)" } ?? ""))
            }
            func ints(_ values: [String: Int]) -> [String: Double] { values.mapValues(Double.init) }
            func check(_ label: String, _ got: [Int: [String: Double]], _ want: (Day) -> [String: Double]) {
                Self.check(label, got, expected, want)
            }
            let actives = try await chart("actives")
            check("actives", Self.series(actives, "actives", firstDay: firstDay)) { ints($0.actives) }
            let byCountry = try await chart("actives", segment: "storefront")
            check("actives by storefront", Self.series(byCountry, "actives", firstDay: firstDay)) { ints($0.activesByStorefront) }
            let trials = try await chart("trials")
            check("trials", Self.series(trials, "trials", firstDay: firstDay)) { ints($0.trials) }
            let mrr = try await chart("mrr", segment: nil)
            check("mrr", Self.series(mrr, "mrr", firstDay: firstDay, currency: true)) { $0.mrr.mapValues { Double($0) / 1000 } }
            let movement = try await chart("actives_movement")
            let starts = Self.series(movement, "new", firstDay: firstDay), back = Self.series(movement, "reactivated", firstDay: firstDay)
            check("paid starts", starts) { ints($0.paidStarts) }
            check("paid returns", back) { ints($0.paidReturns) }
            check("churned", Self.series(movement, "churned", firstDay: firstDay)) { $0.churned.mapValues { -Double($0) } }
            let trialMoves = try await chart("trials_movement")
            check("trials new", Self.series(trialMoves, "new", firstDay: firstDay)) { ints($0.trialsNew) }
            check("trials converted", Self.series(trialMoves, "converted", firstDay: firstDay)) { $0.trialsConverted.mapValues { -Double($0) } }
            check("trials expired", Self.series(trialMoves, "expired", firstDay: firstDay)) { $0.trialsExpired.mapValues { -Double($0) } }
            let churn = try await chart("churn", segment: nil)
            check("churned (churn)", Self.series(churn, "churned", firstDay: firstDay)) { ["": Double($0.churned.values.reduce(0, +))] }
            let customers = try await chart("customers_new", segment: nil)
            check("customers", Self.series(customers, "customers", firstDay: firstDay)) { ["": Double($0.customersNew)] }
            let conversion = try await chart("trial_conversion_rate", segment: nil)
            let cohorts = Dictionary(grouping: trialStart.values, by: { $0 }).mapValues(\.count)
            for index in expected.indices {
                let have = Self.series(conversion, "trials", firstDay: firstDay)[index]?[""] ?? 0
                let paid = Self.series(conversion, "converted", firstDay: firstDay)[index]?[""] ?? 0
                if have != Double(cohorts[index] ?? 0) || paid != Double(convertedByCohort[index] ?? 0) {
                    Issue.record("trial cohort day \(index): answers \(cohorts[index] ?? 0) → \(convertedByCohort[index] ?? 0), chart \(have) → \(paid)")
                }
            }
            #expect(!convertedByCohort.isEmpty)
            // MRR movement explains MRR: each day's net movement is the day's change of MRR.
            let mrrMoves = try await chart("mrr_movement", segment: nil)
            let net = Self.series(mrrMoves, "net", firstDay: firstDay, currency: true)
            for index in expected.indices.dropFirst() {
                var change = expected[index].mrr.mapValues { Double($0) / 1000 }
                for (currency, amount) in expected[index - 1].mrr { change[currency, default: 0] -= Double(amount) / 1000 }
                let have = (net[index] ?? [:]).filter { abs($0.value) > 0.0005 }.mapValues { ($0 * 1000).rounded() }
                let need = change.filter { abs($0.value) > 0.0005 }.mapValues { ($0 * 1000).rounded() }
                if have != need { Issue.record("mrr movement day \(index): answers \(need), chart \(have)") }
            }
            try await Self.compareMore(world: world, firstDay: firstDay, expected: expected) { try await chart($0, segment: $1) }
            try await Self.compareCohorts(world: world, firstDay: firstDay, days: Self.days) { try await read($0, $1) }
            // The history is not trivial: several products and currencies, trials that converted
            // and that expired, churn.
            #expect(Set(expected.flatMap { $0.mrr.keys }).count == 3)
            #expect(expected.contains { !$0.trialsConverted.isEmpty })
            #expect(expected.contains { !$0.trialsExpired.isEmpty })
            #expect(expected.contains { !$0.churned.isEmpty })
            #expect(expected.contains { Set($0.actives.keys).count >= 2 })
            #expect(expected.contains { Set($0.activesByStorefront.keys).count >= 3 })
            #expect(expected.contains { !$0.paidReturns.isEmpty })
            #expect(expected.contains { !$0.mrrExpansion.isEmpty && !$0.mrrContraction.isEmpty })
        }
    }
}
