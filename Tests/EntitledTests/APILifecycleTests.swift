import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// A subscription's life told by notifications: the answer after each step, and the same final
/// answer when the same notifications arrive shuffled and duplicated.
@Suite struct APILifecycleTests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    func notifications(token: String) -> [String] {
        let d = Self.day
        return [
            Apple.notification(
                .subscribed, .initialBuy, uuid: "n1", signed: t0 - 40 * d,
                transaction: Apple.transaction(tid: "t1", purchase: t0 - 40 * d, expires: t0 - 10 * d, token: token),
                renewal: Apple.renewal(signed: t0 - 40 * d)),
            Apple.notification(
                .didRenew, uuid: "n2", signed: t0 - 10 * d,
                transaction: Apple.transaction(tid: "t2", purchase: t0 - 10 * d, expires: t0 + 20 * d, token: token),
                renewal: Apple.renewal(signed: t0 - 10 * d)),
            Apple.notification(
                .didChangeRenewalStatus, .autoRenewDisabled, uuid: "n3", signed: t0 - 5 * d,
                transaction: Apple.transaction(tid: "t2", purchase: t0 - 10 * d, expires: t0 + 20 * d, signed: t0 - 5 * d, token: token),
                renewal: Apple.renewal(autoRenew: false, signed: t0 - 5 * d)),
        ]
    }

    /// The answer without the per-customer token (each run creates its own customer).
    func comparable(_ reply: Loopback.Reply) -> NSDictionary {
        var json = reply.json
        json.removeValue(forKey: "appAccountToken")
        return json as NSDictionary
    }

    @Test func stepByStepThenShuffledAndDuplicatedGiveTheSameAnswer() async throws {
        var inOrder: NSDictionary?
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let steps = notifications(token: token)
            #expect(try await api.postV2(steps[0]).status == 200)
            #expect(try await api.customer("u1").entitlement("pro")?["status"] as? String == "expired")
            #expect(try await api.postV2(steps[1]).status == 200)
            let renewed = try await api.customer("u1")
            #expect(renewed.entitlement("pro")?["status"] as? String == "active")
            #expect(renewed.entitlement("pro")?["willRenew"] as? Bool == true)
            #expect(renewed.entitlement("pro")?["expiresAt"] as? String == "2027-02-04T08:00:00.000Z")
            #expect(try await api.postV2(steps[2]).status == 200)
            let cancelled = try await api.customer("u1")
            #expect(cancelled.entitlement("pro")?["status"] as? String == "active")
            #expect(cancelled.entitlement("pro")?["willRenew"] as? Bool == false)
            #expect(cancelled.entitlement("pro")?["unsubscribeDetectedAt"] as? String == "2027-01-10T08:00:00.000Z")
            inOrder = comparable(cancelled)
        }
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let steps = notifications(token: token)
            var statuses: [String] = []
            for index in [2, 0, 2, 1, 0, 1] {
                statuses.append(try await api.postV2(steps[index]).json["status"] as? String ?? "?")
            }
            #expect(statuses == ["accepted", "accepted", "duplicate", "accepted", "duplicate", "duplicate"])
            let shuffled = comparable(try await api.customer("u1"))
            #expect(shuffled == inOrder)
        }
    }
}
