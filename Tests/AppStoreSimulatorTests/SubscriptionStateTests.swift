import AppStore
import AppStoreSimulator
import Foundation
import HTTPServer
import Testing

/// What happens to alice's `pro.monthly` subscription in a transition row.
enum StoreEvent: String, Sendable, CaseIterable {
    case renew, upgrade, extendRenewal, renewalFailsWithGrace, renewalFailsWithoutGrace, autoRenewOffAtRenewal, refund
    case paymentFixed, graceEnds, retryWindowEnds, resubscribe, refundReversed, refundReversedAfterPeriodEnd
}

/// A store with alice subscribed to `pro.monthly`, driven by the pure store API (no signing, no clock).
struct TransitionFixture {
    var store = SimulatedStore(catalog: testCatalog(grace: 16))
    var now = start

    init() throws {
        store.addCustomer("alice")
        _ = try store.purchase("alice", product: "pro.monthly", now: now)
    }

    var subscription: SimulatedSubscription {
        get throws {
            let id = try #require(store.subscriptionIds(of: "alice").first)
            return try #require(store.subscriptions[id])
        }
    }

    mutating func advance(to time: Int64) {
        now = time
        _ = store.processDue(now: time)
    }

    mutating func failNextRenewal(graceDays: Int?) throws {
        store.catalog.gracePeriodDays = graceDays
        _ = try store.setPaymentMethod("alice", succeeds: false, now: now)
        advance(to: try subscription.expiresDate)
    }

    /// Brings the subscription into `state` along the shortest real path.
    mutating func reach(_ state: SubscriptionState) throws {
        switch state {
        case .active: break
        case .gracePeriod: try apply(.renewalFailsWithGrace)
        case .billingRetry: try apply(.renewalFailsWithoutGrace)
        case .expired: try apply(.autoRenewOffAtRenewal)
        case .revoked: try apply(.refund)
        }
        try #require(try subscription.state == state)
    }

    mutating func apply(_ event: StoreEvent) throws {
        switch event {
        case .renew: advance(to: try subscription.expiresDate)
        case .upgrade: _ = try store.changeProduct("alice", from: "pro.monthly", to: "pro.yearly", now: now)
        case .extendRenewal: _ = try store.extendRenewalDate("alice", product: "pro.monthly", days: 7, now: now)
        case .renewalFailsWithGrace: try failNextRenewal(graceDays: 16)
        case .renewalFailsWithoutGrace: try failNextRenewal(graceDays: nil)
        case .autoRenewOffAtRenewal:
            _ = try store.setAutoRenew("alice", product: "pro.monthly", enabled: false, now: now)
            advance(to: try subscription.expiresDate)
        case .refund: _ = try store.refund("alice", product: "pro.monthly", now: now)
        case .paymentFixed: _ = try store.setPaymentMethod("alice", succeeds: true, now: now)
        case .graceEnds: advance(to: try #require(try subscription.gracePeriodExpires))
        case .retryWindowEnds:
            let sub = try subscription
            advance(to: (sub.billingRetryStart ?? sub.expiresDate) + SimulatedStore.billingRetryWindow)
        case .resubscribe: _ = try store.purchase("alice", product: "pro.monthly", now: now)
        case .refundReversed: _ = try store.refundReversed("alice", product: "pro.monthly", now: now)
        case .refundReversedAfterPeriodEnd:
            now = try subscription.expiresDate + 1
            _ = try store.refundReversed("alice", product: "pro.monthly", now: now)
        }
    }
}

@Suite struct SubscriptionStateTransitionTests {
    /// Every "Can transition to:" of ``SubscriptionState``, as (state, event, state after).
    @Test(arguments: [
        (SubscriptionState.active, StoreEvent.renew, SubscriptionState.active),
        (.active, .upgrade, .active),
        (.active, .extendRenewal, .active),
        (.active, .renewalFailsWithGrace, .gracePeriod),
        (.active, .renewalFailsWithoutGrace, .billingRetry),
        (.active, .autoRenewOffAtRenewal, .expired),
        (.active, .refund, .revoked),
        (.gracePeriod, .paymentFixed, .active),
        (.gracePeriod, .upgrade, .active),
        (.gracePeriod, .graceEnds, .billingRetry),
        (.gracePeriod, .refund, .revoked),
        (.billingRetry, .paymentFixed, .active),
        (.billingRetry, .retryWindowEnds, .expired),
        (.billingRetry, .refund, .revoked),
        (.expired, .resubscribe, .active),
        (.expired, .refund, .revoked),
        (.revoked, .refundReversed, .active),
        (.revoked, .refundReversedAfterPeriodEnd, .expired),
        (.revoked, .resubscribe, .active),
    ])
    func transition(from state: SubscriptionState, on event: StoreEvent, to expected: SubscriptionState) throws {
        var fixture = try TransitionFixture()
        try fixture.reach(state)
        try fixture.apply(event)
        #expect(try fixture.subscription.state == expected)
    }

    /// Events that make no sense in a state are refused with a typed error, and the state stays.
    @Test(arguments: [
        (SubscriptionState.expired, StoreEvent.upgrade),
        (.expired, .extendRenewal),
        (.revoked, .upgrade),
        (.billingRetry, .resubscribe),
        (.billingRetry, .extendRenewal),
        (.active, .refundReversed),
    ])
    func refused(in state: SubscriptionState, event: StoreEvent) throws {
        var fixture = try TransitionFixture()
        try fixture.reach(state)
        #expect(throws: SimulatorError.self) { try fixture.apply(event) }
        #expect(try fixture.subscription.state == state)
    }
}

/// Control-API requests whose values once reached unchecked arithmetic and trapped the process.
@Suite struct ControlAPIBoundsTests {
    func control(_ h: Harness) -> APIClient {
        APIClient(router: ControlAPI.router(for: h.simulator))
    }

    func expectRefused(_ client: APIClient, _ path: String, _ body: String, code: String = "INVALID_ACTION") async {
        do {
            let response = try await client.call(.post, path, body: body)
            Issue.record("\(path) \(body) answered \(response.status)")
        } catch let error as HTTPError {
            #expect(error.status == 400)
            #expect(error.code == code, "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func hugeMassExtensionIsRefused() async throws {
        let h = try await Harness()
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        await expectRefused(control(h), "/actions", #"{"action": "massExtendRenewal", "product": "pro.monthly", "days": 9223372036854775807}"#)
        await expectRefused(control(h), "/actions", #"{"action": "massExtendRenewal", "product": "pro.monthly", "days": 0}"#)
    }

    @Test func hugeGracePeriodIsRefused() async throws {
        let h = try await Harness()
        await expectRefused(control(h), "/actions", #"{"action": "gracePeriod", "days": 9223372036854775807}"#)
        // A refused grace period changes nothing: a failing renewal goes straight to billing retry.
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await h.perform("paymentMethod") {
            $0.customer = "alice"
            $0.paymentMethod = "failing"
        }
        let renewal = try await h.advance("P1M")
        #expect(renewal.map(\.payload.subtype) == [nil])
        #expect(renewal.first?.payload.data?.status == .billingRetry)
    }

    @Test(arguments: ["P2000000000000000000W", "P9000000000000000000Y9000000000000000000Y", "P999999999Y", "PT99999999999H"])
    func hugeDurationsAreRefused(_ duration: String) async throws {
        let h = try await Harness()
        #expect(ISODuration(duration) == nil)
        await expectRefused(control(h), "/actions", #"{"action": "advance", "by": "\#(duration)"}"#)
        await expectRefused(control(h), "/scenario", #"{"action": "test", "at": "\#(duration)"}"#, code: "INVALID_SCENARIO")
        #expect(h.simulator.now == start)
    }

    @Test func quantityWhoseTotalOverflowsIsRefused() async throws {
        var catalog = testCatalog()
        catalog.products.append(SimulatedProduct(id: "gold", kind: .consumable, price: Int64.max / 2))
        let simulator = Simulator(
            catalog: catalog, ca: try SimulatorCA.ephemeral(), clock: VirtualClock(milliseconds: start), transport: InMemoryReceiver())
        let client = APIClient(router: ControlAPI.router(for: simulator))
        _ = try await client.call(.post, "/actions", body: #"{"action": "customer", "customer": "alice"}"#)
        await expectRefused(client, "/actions", #"{"action": "purchase", "customer": "alice", "product": "gold", "quantity": 3}"#)
        let bought = try await client.call(.post, "/actions", body: #"{"action": "purchase", "customer": "alice", "product": "gold", "quantity": 2}"#)
        #expect(bought.status == 200)
    }

    @Test func virtualTimeEndsInTheYear9999() async throws {
        let h = try await Harness()
        await expectRefused(control(h), "/clock/advance", #"{"to": 9223372036854775807}"#)
        await expectRefused(control(h), "/clock/advance", #"{"by": "P100000Y"}"#)
        #expect(h.simulator.now == start)
        try await h.simulator.advance(to: Simulator.latestTime)
        #expect(h.simulator.now == Simulator.latestTime)
    }
}
