import AppStore
import AppStoreSimulator
import AppStoreTesting
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// The overview's rollups against a hand count: a seeded simulated history of customers over 60
/// virtual days, driven through the real server; at the end of each day every customer's answer
/// is read and counted (active, trial, grace, billing retry, MRR from the catalog's prices), and
/// the overview must give the same numbers for every day.
@Suite struct ConsoleMetricsTests {
    struct Expected: Equatable, CustomStringConvertible {
        var active = 0, trials = 0, grace = 0, retry = 0, new = 0, churned = 0, mrr = 0.0
        var description: String { "active \(active) trials \(trials) grace \(grace) retry \(retry) new \(new) churned \(churned) mrr \(mrr)" }
    }

    static let customers = (0..<10).map { "c\($0)" }
    static let days = 60

    /// Monthly price (USD units) of a catalog product, as the overview normalizes it.
    static func monthly(_ productId: String) -> Double {
        switch productId {
        case "pro.monthly": 9.99
        case "basic.monthly": 4.99
        case "pro.yearly": Double(99990 / 12) / 1000
        default: 0
        }
    }

    /// Hand count of one day from the customers' answers.
    static func count(_ answers: [[String: Any]], granting: inout Set<String>) -> Expected {
        var expected = Expected()
        var nowGranting = Set<String>()
        for answer in answers {
            for subscription in answer["subscriptions"] as? [[String: Any]] ?? [] {
                guard let current = subscription["current"] as? [String: Any],
                      let status = current["status"] as? String, let otid = current["originalTransactionId"] as? String
                else { continue }
                let grants = status == "active" || status == "gracePeriod"
                let trial = current["periodType"] as? String == "trial"
                if grants {
                    nowGranting.insert(otid)
                    if trial { expected.trials += 1 } else {
                        expected.active += 1
                        expected.mrr += monthly(current["productId"] as? String ?? "")
                    }
                }
                if status == "gracePeriod" { expected.grace += 1 }
                if status == "billingRetry" { expected.retry += 1 }
            }
        }
        expected.churned = granting.subtracting(nowGranting).count
        granting = nowGranting
        expected.mrr = (expected.mrr * 1000).rounded() / 1000
        return expected
    }

    @Test func overviewEqualsTheCustomersAnswersDayByDay() async throws {
        try await SimulatorEndToEndTests.run { world in
            var random = SplitMix64(seed: 19)
            func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
            // From 08:00 to noon: every action happens at noon, every count at 23:59:59 UTC.
            try await world.act("advance") { $0.by = "PT4H" }
            try await world.act("gracePeriod") { $0.days = 16 }
            var tokens: [String: String] = [:]
            for id in Self.customers {
                tokens[id] = try await world.token(id)
                try await world.act("customer") { $0.customer = id }
            }
            let firstDay = metricDay(world.simulator.clock.nowMilliseconds())
            var expected: [Expected] = []
            var granting = Set<String>()
            // Every notification of the history: new subscriptions are its INITIAL_BUYs per day.
            var sent: [SignedNotification] = []
            for _ in 0..<Self.days {
                for id in Self.customers {
                    let products = ["pro.monthly", "basic.monthly", "pro.yearly"]
                    let product = products[Int(random.next() % 3)]
                    if chance(12) {
                        sent += (try? await world.act("purchase") {
                            $0.customer = id
                            $0.product = product
                            $0.appAccountToken = tokens[id]
                            $0.offer = product == "pro.monthly" && chance(50) ? "intro" : nil
                        }) ?? []
                    }
                    if chance(4) { _ = try? await world.act("autoRenew") { $0.customer = id; $0.product = product; $0.enabled = chance(50) } }
                    if chance(4) { _ = try? await world.act("paymentMethod") { $0.customer = id; $0.paymentMethod = chance(50) ? "failing" : "ok" } }
                    if chance(2) { _ = try? await world.act("refund") { $0.customer = id; $0.product = product } }
                    if chance(2) { _ = try? await world.act("upgrade") { $0.customer = id; $0.product = "basic.monthly"; $0.to = "pro.monthly" } }
                }
                try await world.act("advance") { $0.by = "PT11H59M59S" }
                var answers: [[String: Any]] = []
                for id in Self.customers { answers.append(try await world.customer(id).json) }
                var today = Self.count(answers, granting: &granting)
                let day = metricDay(world.simulator.clock.nowMilliseconds())
                today.new = sent.filter { $0.payload.subtype == .initialBuy && metricDay($0.payload.signedDate ?? 0) == day }.count
                expected.append(today)
                try await world.act("advance") { $0.by = "PT12H0M1S" }
            }
            let from = OverviewDay.format(firstDay), to = OverviewDay.format(firstDay + Int64(Self.days) - 1)
            let reply = try await Loopback.send(
                port: world.port, "GET", "/v1/metrics/overview?from=\(from)&to=\(to)&interval=day&environment=Sandbox",
                headers: ["Authorization": APIHarness.admin])
            #expect(reply.status == 200)
            let series = try #require(reply.json["series"] as? [[String: Any]])
            #expect(series.count == Self.days)
            var got: [Expected] = []
            for point in series {
                let mrr = (point["mrr"] as? [String: Any])?["USD"] as? Double ?? 0
                got.append(
                    Expected(
                        active: point["activeSubscriptions"] as? Int ?? -1, trials: point["activeTrials"] as? Int ?? -1,
                        grace: point["inGracePeriod"] as? Int ?? -1, retry: point["inBillingRetry"] as? Int ?? -1,
                        new: point["newSubscriptions"] as? Int ?? -1, churned: point["churned"] as? Int ?? -1,
                        mrr: (mrr * 1000).rounded() / 1000))
            }
            for (day, (want, have)) in zip(expected, got).enumerated() where want != have {
                Issue.record("day \(day): counted \(want), overview \(have)")
            }
            // The history is not trivial: it had paying customers, trials, and billing trouble.
            #expect(expected.contains { $0.active > 2 })
            #expect(expected.contains { $0.trials > 0 })
            #expect(expected.contains { $0.grace + $0.retry > 0 })
            #expect(expected.contains { $0.churned > 0 })
        }
    }
}

/// Dates as the overview's query takes them.
enum OverviewDay {
    static func format(_ day: Int64) -> String {
        let (y, m, d) = Time.civilFromDays(day)
        return String(format: "%04d-%02d-%02d", Int(y), Int(m), Int(d))
    }
}
