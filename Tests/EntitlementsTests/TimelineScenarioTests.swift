import Entitlements
import Testing

/// Histories that arrive late or out of step with what they describe: the events say what
/// happened, never what a partial history seemed to say.
@Suite struct TimelineScenarioTests {
    func types(_ events: [CustomerEvent]) -> [EventType] { events.map(\.type) }

    /// A monthly subscriber's facts as Apple signs them: each period bought at the previous end.
    func monthly(_ otid: String, periods: Int, cancelAt: Int64? = nil) -> [Fact] {
        var facts: [Fact] = []
        for k in 0..<periods {
            let start = months(k), end = months(k + 1)
            facts += [
                tx("\(otid)-t\(k)", otid: otid, purchase: start, expires: end), renewal(otid: otid, signed: start),
                note(k == 0 ? .subscribed : .didRenew, k == 0 ? .initialBuy : nil, at: start, otid: otid, txn: "\(otid)-t\(k)"),
            ]
        }
        if let cancelAt {
            let end = months(periods)
            facts += [
                renewal(otid: otid, autoRenew: false, signed: cancelAt),
                note(.didChangeRenewalStatus, .autoRenewDisabled, at: cancelAt, otid: otid),
                renewal(otid: otid, autoRenew: false, intent: 1, signed: end), note(.expired, .voluntary, at: end, otid: otid),
            ]
        }
        return facts
    }

    @Test("100 days of history for 12 customers in one burst: only what happened")
    func hundredDaysInOneBurst() {
        let end = T0 + 100 * day
        var all: [CustomerEvent] = []
        for customer in 0..<12 {
            let cancels = customer < 2
            let facts = monthly("o\(customer)", periods: cancels ? 2 : 4, cancelAt: cancels ? T0 + 40 * day : nil)
            let burst = accumulated(realTime(facts).map { ($0.facts, end) }, end: end)
            #expect(said(burst) == said(eventTimeline(facts: facts, policy: policy, now: end, environment: .production)))
            all += burst
        }
        #expect(all.filter { $0.type == .subscriptionAutoRenewDisabled }.count == 2)
        #expect(all.filter { $0.type == .subscriptionAutoRenewEnabled }.isEmpty)
        #expect(all.filter { $0.type == .subscriptionExpired }.map(\.occurredAt) == [months(2), months(2)])
        #expect(all.filter { $0.type == .subscriptionStarted }.count == 12)
        #expect(all.filter { $0.type == .subscriptionRenewed }.count == 10 * 3 + 2)
        // The disable is dated when the customer turned auto-renew off, never at the purchase.
        #expect(all.filter { $0.type == .subscriptionAutoRenewDisabled }.allSatisfy { $0.occurredAt == T0 + 40 * day })
    }

    @Test("a renewal signed after the period end is a renewal, also when another fact came between")
    func lateRenewal() {
        let e1 = months(1)
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            tx("l1", otid: "o2", product: "lifetime", purchase: e1 + hour, type: .nonConsumable),
            tx("t2", purchase: e1, expires: months(2), signed: e1 + 2 * hour), renewal(signed: e1 + 2 * hour),
        ]
        let live = accumulated(realTime(facts), end: e1 + day)
        #expect(types(live.sorted(by: CustomerEvent.happensBefore)) == [.subscriptionStarted, .subscriptionRenewed, .purchaseCompleted])
        #expect(live.first { $0.type == .subscriptionRenewed }?.occurredAt == e1)
    }

    @Test("grace period signed half a second after the period end: one billing issue, no expiry")
    func graceSignedLater() {
        let e1 = months(1), grace = e1 + 16 * day
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0), note(.subscribed, .initialBuy, at: T0, txn: "t1"),
            renewal(retry: true, grace: grace, intent: 2, signed: e1 + 500), note(.didFailToRenew, .gracePeriod, at: e1 + 500),
        ]
        for arrivals in [realTime(facts), realTime(facts).map { ($0.facts, e1 + 3 * day) }] {
            let events = accumulated(arrivals, end: e1 + 3 * day)
            #expect(types(events) == [.subscriptionStarted, .subscriptionBillingIssue])
            let issue = events[1]
            #expect(issue.occurredAt == e1)
            #expect(issue.details["kind"] == "gracePeriod")
            #expect(issue.details["gracePeriodExpiresAt"] == String(grace))
        }
    }

    @Test("grace period that becomes billing retry: one billing issue, then the grace period's end")
    func graceThenBillingRetry() {
        let e1 = months(1), grace = e1 + 16 * day
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, grace: grace, intent: 2, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1),
            renewal(retry: true, grace: grace, intent: 2, signed: grace), note(.gracePeriodExpired, at: grace),
        ]
        let events = accumulated(realTime(facts), end: grace + day)
        #expect(types(events) == [.subscriptionStarted, .subscriptionBillingIssue, .subscriptionGracePeriodExpired])
        #expect(events.last?.occurredAt == grace)
        // Recovered on day 20: the renewal and the recovery, nothing expired.
        let recovered = facts + [tx("t2", purchase: e1 + 20 * day, expires: months(1, after: e1 + 20 * day)), renewal(signed: e1 + 20 * day)]
        let after = accumulated(realTime(recovered), end: e1 + 21 * day)
        #expect(types(after).suffix(2) == [.subscriptionRenewed, .subscriptionRecovered])
        #expect(!types(after).contains(.subscriptionExpired))
    }

    @Test("billing retry without grace: a billing issue at the period end, expired when retry ends")
    func billingRetryWithoutGrace() {
        let e1 = months(1)
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1),
            renewal(autoRenew: false, retry: false, intent: 2, signed: e1 + 60 * day), note(.expired, .billingRetry, at: e1 + 60 * day),
        ]
        let events = accumulated(realTime(facts), end: e1 + 61 * day)
        #expect(types(events) == [.subscriptionStarted, .subscriptionBillingIssue, .subscriptionAutoRenewDisabled, .subscriptionExpired])
        #expect(events[1].details["kind"] == "billingRetry")
        #expect(events[3].occurredAt == e1 + 60 * day && events[3].details["reason"] == "billingError")
    }

    @Test("a refund is a refund: no auto_renew_disabled, no expiry after it")
    func refundAlone() {
        let e1 = months(1), refundAt = T0 + 10 * day
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            tx("t1", purchase: T0, expires: e1, signed: refundAt, revoked: refundAt), renewal(signed: refundAt),
            note(.refund, at: refundAt, txn: "t1"),
        ]
        let events = accumulated(realTime(facts), end: e1 + 10 * day)
        #expect(types(events) == [.subscriptionStarted, .subscriptionRefunded])
        #expect(events[1].occurredAt == refundAt)
        #expect(events[1].subject == "t1")
    }

    @Test("events of one instant in one order, whatever order the facts came in")
    func sameInstantOrder() {
        let e1 = months(1), recoveredAt = e1 + 3 * day, refundAt = recoveredAt + 5 * day
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, grace: e1 + 16 * day, intent: 2, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1),
            tx("t2", purchase: recoveredAt, expires: months(1, after: recoveredAt)), renewal(signed: recoveredAt),
            tx("t2", purchase: recoveredAt, expires: months(1, after: recoveredAt), signed: refundAt, revoked: refundAt),
            renewal(autoRenew: false, signed: refundAt),
        ]
        let end = refundAt + day
        let expected: [EventType] = [
            .subscriptionStarted, .subscriptionBillingIssue, .subscriptionRenewed, .subscriptionRecovered,
            .subscriptionAutoRenewDisabled, .subscriptionRefunded,
        ]
        #expect(types(eventTimeline(facts: facts, policy: policy, now: end, environment: .production)) == expected)
        var rng = SplitMix64(seed: 11)
        for _ in 0..<20 {
            let shuffled = (facts + facts.prefix(4)).shuffled(using: &rng)
            #expect(types(eventTimeline(facts: shuffled, policy: policy, now: end, environment: .production)) == expected)
        }
    }

    @Test("an auto-renew change carries the period it happened in, whatever the transaction ids")
    func autoRenewCarriesItsPeriod() {
        let facts: [Fact] = [
            tx("z1", purchase: T0, expires: months(1)), renewal(signed: T0),
            tx("a2", purchase: months(1), expires: months(2)), renewal(signed: months(1)),
            renewal(autoRenew: false, signed: months(1) + 3 * day),
        ]
        let events = eventTimeline(facts: facts, policy: policy, now: months(1) + 4 * day, environment: .production)
        let disabled = try! #require(events.first { $0.type == .subscriptionAutoRenewDisabled })
        #expect(disabled.transactionId == "a2" && disabled.occurredAt == months(1) + 3 * day)
        #expect(events.first { $0.type == .subscriptionStarted }?.transactionId == "z1")
    }

    @Test("analytics fields: store, product, price, currency, period type, offer")
    func analyticsFields() {
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: months(1), offer: .introductory, discount: .freeTrial),
            tx("t2", purchase: months(1), expires: months(2), offer: .promotional),
        ]
        let events = eventTimeline(facts: facts, policy: policy, now: months(1) + day, environment: .production)
        let started = try! #require(events.first { $0.type == .subscriptionStarted })
        #expect(started.details["periodType"] == "trial" && started.details["offerType"] == "introductory")
        #expect(started.details["price"] == "9.99" && started.details["currency"] == "USD" && started.details["store"] == "appStore")
        let offer = try! #require(events.first { $0.type == .subscriptionOfferRedeemed })
        #expect(offer.details["periodType"] == "offer" && offer.details["offerType"] == "promotional")
        #expect(offer.occurredAt == months(1) && offer.productId == "monthly")
    }

    @Test("a retention offer: period type retentionOffer in the answer, offerType retentionOffer in the events")
    func retentionOffer() {
        let facts: [Fact] = [
            tx("t1", purchase: T0, expires: months(1)),
            tx("t2", purchase: months(1), expires: months(2), offer: .retentionOffer, discount: .payAsYouGo),
            renewal(offer: .retentionOffer, signed: months(1)),
        ]
        let now = months(1) + day
        #expect(state(facts, at: now).entitlement("pro")?.periodType == .retentionOffer)
        let events = eventTimeline(facts: facts, policy: policy, now: now, environment: .production)
        let offer = try! #require(events.first { $0.type == .subscriptionOfferRedeemed })
        #expect(offer.transactionId == "t2" && offer.occurredAt == months(1))
        #expect(offer.details["offerType"] == "retentionOffer" && offer.details["periodType"] == "offer")
        let renewed = try! #require(events.first { $0.type == .subscriptionRenewed })
        #expect(renewed.details["offerType"] == "retentionOffer")
    }
}
