import EntitledCrypto
import Entitlements
import Testing

/// An experiment's split (deterministic, by weight, independent between experiments), who is
/// enrolled or keeps their variant, and the per-customer outcomes its results sum.
struct ExperimentTests {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] { SHA256.hash(bytes) }

    static func experiment(
        _ id: String, weights: [Int] = [1, 1], audience: TargetingConditions = TargetingConditions(), status: ExperimentStatus = .running
    ) -> Experiment {
        Experiment(
            id: id, variants: weights.enumerated().map { ExperimentVariant(offeringId: "\(id)-\($0.offset)", weight: $0.element) },
            audience: audience, status: status)
    }

    /// The split is SHA-256 as any system computes it: these points and slots were computed with
    /// Python's hashlib (`int.from_bytes(sha256(b"spring-paywall\x1fana").digest()[:8], "big")`).
    @Test func theSplitIsSHA256OfTheExperimentAndTheCustomer() {
        let ana = ExperimentBucketing.point(digest: Self.sha256(ExperimentBucketing.key(experimentId: "spring-paywall", appUserId: "ana")))
        let bob = ExperimentBucketing.point(digest: Self.sha256(ExperimentBucketing.key(experimentId: "spring-paywall", appUserId: "bob")))
        #expect(ana == 0x5755_69a0_22a2_dd9c)
        #expect(bob == 0xa3a1_524d_8cfc_ada3)
        // ⌊u × 10 / 2^64⌋: 3 and 6; with weights [4, 6] (cumulative 4, 10): variants 0 and 1.
        #expect(ExperimentBucketing.variant(point: ana, weights: [4, 6]) == 0)
        #expect(ExperimentBucketing.variant(point: bob, weights: [4, 6]) == 1)
        #expect(ExperimentBucketing.variant(point: ana, weights: [3, 7]) == 1)
        #expect(ExperimentBucketing.variant(point: 0, weights: [1, 1]) == 0)
        #expect(ExperimentBucketing.variant(point: .max, weights: [1, 1]) == 1)
    }

    /// 100,000 customers: each one's variant is the same when asked again, the shares follow the
    /// weights within half a percentage point (over 5 standard deviations at this size), and a
    /// second experiment splits each variant of the first in the same proportions (independent
    /// buckets).
    @Test func weightsHoldOverAHundredThousandCustomersAndAssignmentIsStable() {
        let first = Self.experiment("price-test", weights: [1, 2, 7])
        let second = Self.experiment("copy-test", weights: [1, 1])
        let n = 100_000
        var counts = [0, 0, 0]
        var joint = [[0, 0], [0, 0], [0, 0]]
        for k in 0..<n {
            let user = "customer-\(k)"
            let a = ExperimentBucketing.variant(of: user, in: first, sha256: Self.sha256)
            let b = ExperimentBucketing.variant(of: user, in: second, sha256: Self.sha256)
            if k % 97 == 0 { #expect(ExperimentBucketing.variant(of: user, in: first, sha256: Self.sha256) == a) }
            counts[a] += 1
            joint[a][b] += 1
        }
        for (index, weight) in [1, 2, 7].enumerated() {
            let share = Double(counts[index]) / Double(n)
            #expect(abs(share - Double(weight) / 10) < 0.005, "variant \(index): \(share)")
            let half = Double(joint[index][0]) / Double(counts[index])
            #expect(abs(half - 0.5) < 0.02, "variant \(index) split by the other experiment: \(half)")
        }
    }

    @Test func theFirstRunningExperimentWhoseAudienceMatchesEnrols() {
        let experiments = [
            Self.experiment("b-new-fr", audience: TargetingConditions(storefronts: ["FRA"], states: [.new])),
            Self.experiment("a-paused", status: .paused),
            Self.experiment("c-everyone"),
            Self.experiment("0-ended", status: .ended),
        ]
        func assign(_ audience: Audience, _ enrolments: [ExperimentEnrolment] = []) -> ExperimentAssignment? {
            assignExperiment(experiments: experiments, enrolments: enrolments, appUserId: "ana", audience: audience, sha256: Self.sha256)
        }
        // Ended and paused ones enrol no one; the first by id whose audience holds does.
        let french = assign(Audience(storefront: "FRA", states: [.new]))
        #expect(french?.experimentId == "b-new-fr")
        #expect(french?.enrols == true)
        #expect(french?.offeringId == "b-new-fr-\(french?.variant ?? -1)")
        #expect(assign(Audience(storefront: "FRA", states: [.active]))?.experimentId == "c-everyone")
        #expect(assign(Audience(storefront: "USA", states: [.new]))?.experimentId == "c-everyone")
        // Without a running experiment for the audience: none.
        let narrow = [Self.experiment("only-fr", audience: TargetingConditions(storefronts: ["FRA"]))]
        #expect(assignExperiment(experiments: narrow, enrolments: [], appUserId: "ana", audience: Audience(), sha256: Self.sha256) == nil)
    }

    @Test func anEnrolledCustomerKeepsTheirVariantWhileRunningOrPausedAndSeesNothingOnceEnded() {
        let enrolled = ExperimentEnrolment(experimentId: "fr-only", variant: 1, offeringId: "fr-only-1", enrolledAt: T0)
        for status in [ExperimentStatus.running, .paused] {
            let experiments = [
                Self.experiment("fr-only", audience: TargetingConditions(storefronts: ["FRA"]), status: status), Self.experiment("a-all"),
            ]
            // The audience no longer holds (now in the USA), another experiment would enrol: the
            // recorded variant stays.
            let kept = assignExperiment(
                experiments: experiments, enrolments: [enrolled], appUserId: "ana", audience: Audience(storefront: "USA"), sha256: Self.sha256)
            #expect(kept == ExperimentAssignment(experimentId: "fr-only", variant: 1, offeringId: "fr-only-1", enrols: false))
        }
        let ended = [Self.experiment("fr-only", status: .ended), Self.experiment("a-all")]
        let after = assignExperiment(
            experiments: ended, enrolments: [enrolled], appUserId: "ana", audience: Audience(storefront: "FRA"), sha256: Self.sha256)
        #expect(after?.experimentId == "a-all")
        #expect(after?.enrols == true)
        #expect(
            assignExperiment(
                experiments: [Self.experiment("fr-only", status: .ended)], enrolments: [enrolled], appUserId: "ana", audience: Audience(),
                sha256: Self.sha256) == nil)
        // The recorded variant wins over the bucket (weights changed since).
        let reweighted = [Self.experiment("fr-only", weights: [1, 1_000_000])]
        let zero = ExperimentEnrolment(experimentId: "fr-only", variant: 0, offeringId: "fr-only-0", enrolledAt: T0)
        #expect(
            assignExperiment(experiments: reweighted, enrolments: [zero], appUserId: "ana", audience: Audience(), sha256: Self.sha256)?
                .variant == 0)
    }

    @Test func anOutcomeCountsTheWindowAfterEnrolment() {
        let enrolled = T0
        let facts = [
            // Before enrolment: not counted.
            tx("old", otid: "o0", purchase: T0 - 10 * day, price: 1_000),
            // A trial on day 1, converted on day 8, refunded on day 20.
            tx("t1", otid: "o1", purchase: T0 + day, offer: .introductory, discount: .freeTrial, price: 0),
            tx("t2", otid: "o1", purchase: T0 + 8 * day, price: 9_990),
            tx("t2", otid: "o1", purchase: T0 + 8 * day, signed: T0 + 20 * day, revoked: T0 + 20 * day, price: 9_990),
            // Another environment: not counted.
            tx("s1", otid: "o2", purchase: T0 + 2 * day, price: 5_000, environment: .sandbox),
        ]
        let week = ExperimentOutcome(facts: facts, environments: [.production], enrolledAt: enrolled, until: enrolled + 7 * day)
        #expect(week.trialStarted && !week.trialConverted && !week.paid && week.revenue.isEmpty)
        let month = ExperimentOutcome(facts: facts, environments: [.production], enrolledAt: enrolled, until: enrolled + 30 * day)
        #expect(month.trialStarted && month.trialConverted && month.paid)
        #expect(month.revenue == ["USD": 9_990])
        #expect(month.realizedRevenue.isEmpty)
        let fortnight = ExperimentOutcome(facts: facts, environments: [.production], enrolledAt: enrolled, until: enrolled + 14 * day)
        #expect(fortnight.realizedRevenue == ["USD": 9_990])
    }

    /// A Google Play purchase counts as an App Store one: its start and each renewal are paid
    /// purchases of the window they fall in (one before enrolment is not counted), a voided order
    /// is a refund, another environment is not counted. Its price is not known yet (Play facts
    /// carry none), so it adds no revenue.
    @Test func aPlayPurchaseCountsLikeAnAppStoreOne() {
        let enrolled = T0 + 10 * day
        let playFacts: [Fact] = [
            // Started before enrolment; renewed on day 20 after it; that order voided on day 25.
            play("p1", .active, start: T0, expiry: T0 + 30 * day, observed: T0, order: "GPA.p1.0"),
            play("p1", .active, start: T0, expiry: T0 + 60 * day, observed: T0 + 30 * day + hour, order: "GPA.p1.1"),
            voided("p1", order: "GPA.p1.1", at: T0 + 35 * day),
            play("s1", .active, start: enrolled + day, observed: enrolled + day, environment: .sandbox),
        ]
        // The same behaviour at Apple: the same counts; only the price is Apple's alone for now.
        let appleFacts: [Fact] = [
            tx("a0", otid: "a", purchase: T0, expires: T0 + 30 * day),
            tx("a1", otid: "a", purchase: T0 + 30 * day, expires: T0 + 60 * day),
            tx("a1", otid: "a", purchase: T0 + 30 * day, expires: T0 + 60 * day, signed: T0 + 35 * day, revoked: T0 + 35 * day),
            tx("s0", otid: "s", purchase: enrolled + day, environment: .sandbox),
        ]
        for days: Int64 in [7, 30] {
            let outcome = ExperimentOutcome(facts: playFacts, environments: [.production], enrolledAt: enrolled, until: enrolled + days * day)
            let apple = ExperimentOutcome(facts: appleFacts, environments: [.production], enrolledAt: enrolled, until: enrolled + days * day)
            #expect(outcome.paid == (days == 30))
            #expect(outcome.paid == apple.paid && outcome.trialStarted == apple.trialStarted && outcome.trialConverted == apple.trialConverted)
            #expect(outcome.revenue.isEmpty && outcome.realizedRevenue.isEmpty)
            #expect(apple.revenue == (days == 30 ? ["USD": 9_990] : [:]) && apple.realizedRevenue.isEmpty)
        }
        // Before enrolment only: nothing; both stores together count once each.
        let before = ExperimentOutcome(facts: Array(playFacts.prefix(1)), environments: [.production], enrolledAt: enrolled, until: enrolled + 90 * day)
        #expect(before == ExperimentOutcome())
        let mixed = playFacts + [tx("m1", otid: "m", purchase: enrolled + 2 * day, price: 9_990)]
        let both = ExperimentOutcome(facts: mixed, environments: [.production], enrolledAt: enrolled, until: enrolled + 7 * day)
        #expect(both.paid && both.revenue == ["USD": 9_990] && both.realizedRevenue == ["USD": 9_990])
    }

    /// A simulated population's results equal the counts of what each customer was scripted to do.
    @Test func resultsEqualTheCountsOfEachCustomersOwnBehaviour() {
        struct Script {
            var variant: Int
            var enrolledAt: Int64
            var trialDay: Int?
            var paidDay: Int?
            var refundDay: Int?
            var price: Int64
            /// Bought on Google Play: a start, a renewal 30 days on, a voided order. Play facts
            /// carry neither the offer phase nor the price yet, so a Play customer has no trial
            /// and adds no revenue.
            var play = false
        }
        var random = SplitMix64(seed: 37)
        let now = T0 + 120 * day
        var scripts: [Script] = []
        for _ in 0..<600 {
            let enrolledAt = T0 + Int64.random(in: 0...(100 * day), using: &random)
            let play = Int.random(in: 0...2, using: &random) == 0
            let trialDay = !play && Bool.random(using: &random) ? Int.random(in: 0...10, using: &random) : nil
            let paidDay = Int.random(in: 0...3, using: &random) == 0 ? nil : Int.random(in: (trialDay ?? 0)...100, using: &random)
            let refundDay = paidDay.flatMap { day in Int.random(in: 0...4, using: &random) == 0 ? day + Int.random(in: 1...20, using: &random) : nil }
            scripts.append(
                Script(
                    variant: Int.random(in: 0...1, using: &random), enrolledAt: enrolledAt, trialDay: trialDay, paidDay: paidDay,
                    refundDay: refundDay, price: [4_990, 9_990].randomElement(using: &random)!, play: play))
        }
        var tally = ExperimentTally(variantCount: 2, now: now)
        for (k, s) in scripts.enumerated() {
            var facts: [Fact] = []
            func at(_ d: Int) -> Int64 { s.enrolledAt + Int64(d) * day + 1 }
            if s.play, let p = s.paidDay {
                // Started on day p, renewed on day p + 30 (seen an hour later), the first order voided.
                facts.append(play("g\(k)", .active, start: at(p), expiry: at(p + 30), observed: at(p), order: "GPA.\(k).0"))
                facts.append(play("g\(k)", .active, start: at(p), expiry: at(p + 60), observed: at(p + 30) + hour, order: "GPA.\(k).1"))
                if let r = s.refundDay { facts.append(voided("g\(k)", order: "GPA.\(k).0", at: at(r))) }
            }
            if let t = s.trialDay { facts.append(tx("t\(k)", otid: "o\(k)", purchase: at(t), offer: .introductory, discount: .freeTrial, price: 0)) }
            if !s.play, let p = s.paidDay {
                facts.append(tx("p\(k)", otid: "o\(k)", purchase: at(p), price: s.price))
                if let r = s.refundDay {
                    facts.append(tx("p\(k)", otid: "o\(k)", purchase: at(p), signed: at(r), revoked: at(r), price: s.price))
                }
            }
            tally.add(variant: s.variant, enrolledAt: s.enrolledAt, facts: facts.shuffled(using: &random), environments: [.production])
        }
        let results = tally.results()
        #expect(scripts.filter { $0.play && $0.paidDay != nil }.count > 100)
        for variant in 0..<2 {
            let own = scripts.filter { $0.variant == variant }
            #expect(tally.customers[variant] == own.count)
            for (index, days) in ExperimentStatistics.horizonDays.enumerated() {
                // Within the horizon: at or before day `days` (the events fall 1 ms into their day).
                let observed = own.filter { $0.enrolledAt + Int64(days) * day <= now }
                func within(_ d: Int?) -> Bool { d.map { $0 < days } ?? false }
                let r = results[variant][index]
                #expect(r.customers == observed.count)
                #expect(r.enoughData == (observed.count >= ExperimentStatistics.minimumCustomers))
                #expect(r.trialsStarted.count == observed.filter { within($0.trialDay) }.count)
                #expect(r.trialConversions.count == observed.filter { within($0.trialDay) && within($0.paidDay) }.count)
                #expect(r.paidConversions.count == observed.filter { within($0.paidDay) }.count)
                let revenue = observed.filter { within($0.paidDay) && !$0.play }.map(\.price).reduce(0, +)
                let realized = observed.filter { within($0.paidDay) && !within($0.refundDay) && !$0.play }.map(\.price).reduce(0, +)
                #expect(r.revenuePerCustomer.first?.total ?? 0 == revenue)
                #expect(r.realizedRevenuePerCustomer.first?.total ?? 0 == realized)
                if let mean = r.revenuePerCustomer.first {
                    #expect(abs(mean.mean - Double(revenue) / Double(observed.count)) < 1e-6)
                    #expect(mean.low <= mean.mean && mean.mean <= mean.high)
                }
                #expect(r.paidConversions.low <= r.paidConversions.rate && r.paidConversions.rate <= r.paidConversions.high)
            }
        }
    }

    /// Wilson's interval and the normal interval of a mean against values computed by hand.
    @Test func intervalsFollowTheirFormulas() {
        // 10 of 100: Wilson 95 % is 0.0552…0.1744.
        let p = ProportionEstimate(successes: 10, trials: 100)
        #expect(abs(p.low - 0.05523) < 1e-4 && abs(p.high - 0.17437) < 1e-4)
        // 0 of 20: the interval still has width (0…0.1611).
        let zero = ProportionEstimate(successes: 0, trials: 20)
        #expect(zero.low == 0 && abs(zero.high - 0.16113) < 1e-4)
        // Amounts 0, 0, 10, 10 (×1000): mean 5000, s = 5773.5, half-width 1.96 × s / 2 = 5658.
        var tally = ExperimentTally(variantCount: 1, now: T0 + 10 * day)
        for (k, price) in ([nil, nil, 10_000, 10_000] as [Int64?]).enumerated() {
            let facts = price.map { [tx("p\(k)", otid: "o\(k)", purchase: T0 + 1, price: $0)] } ?? []
            tally.add(variant: 0, enrolledAt: T0, facts: facts, environments: [.production])
        }
        let mean = tally.results()[0][0].revenuePerCustomer[0]
        #expect(mean.mean == 5_000)
        #expect(abs(mean.high - (5_000 + 1.959964 * 5_773.50269 / 2)) < 0.01)
        #expect(mean.low == 0)
    }
}
