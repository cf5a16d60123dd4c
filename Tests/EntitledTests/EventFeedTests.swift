import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Storage
import Testing

/// `GET /v1/events`: the outbox in commit order, with long polling.
@Suite struct EventFeedTests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    func notifications(token: String) -> [String] {
        let d = Self.day
        return [
            Apple.notification(
                .subscribed, .initialBuy, uuid: "n1", signed: t0 - 40 * d,
                transaction: Apple.transaction(tid: "t1", purchase: t0 - 40 * d, expires: t0 + 10 * d, token: token),
                renewal: Apple.renewal(signed: t0 - 40 * d)),
            Apple.notification(
                .didChangeRenewalStatus, .autoRenewDisabled, uuid: "n2", signed: t0 - 5 * d,
                transaction: Apple.transaction(tid: "t1", purchase: t0 - 40 * d, expires: t0 + 10 * d, signed: t0 - 5 * d, token: token),
                renewal: Apple.renewal(autoRenew: false, signed: t0 - 5 * d)),
        ]
    }

    func page(_ reply: Loopback.Reply) throws -> (types: [String], events: [[String: Any]], cursor: String) {
        let events = try #require(reply.json["events"] as? [[String: Any]])
        return (events.compactMap { $0["type"] as? String }, events, try #require(reply.json["nextCursor"] as? String))
    }

    @Test func feedListsEventsInCommitOrderAndLongPollWakesOnCommit() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let steps = notifications(token: token)
            #expect(try await api.postV2(steps[0]).status == 200)
            let first = try page(try await api.send("GET", "/v1/events", auth: APIHarness.reader))
            #expect(first.types == ["subscription.started"])
            let started = try #require(first.events.first)
            #expect(started["appUserId"] as? String == "u1")
            #expect(started["originalTransactionId"] as? String == "o1")
            #expect(started["productId"] as? String == "pro.monthly")
            #expect(started["entitlements"] as? [String] == ["pro"])
            #expect(started["occurredAt"] as? String == "2026-12-06T08:00:00.000Z")
            #expect((started["cause"] as? [String: Any])?["notificationUUID"] as? String == "n1")
            if testFastPaths.enabled {
                #expect((started["customer"] as? [String: Any])?["appUserId"] as? String == "u1")
            } else {
                // Without the projection cache no rendered answer is stored to embed.
                #expect(started["customer"] is NSNull)
            }
            #expect((started["id"] as? String)?.hasPrefix("evt_") == true)

            // Nothing new: an immediate empty page with the same cursor.
            let empty = try page(try await api.send("GET", "/v1/events?after=\(first.cursor)", auth: APIHarness.reader))
            #expect(empty.types.isEmpty)
            #expect(empty.cursor == first.cursor)

            // A long poll returns once the next commit lands.
            let cursor = first.cursor
            async let polled = api.send("GET", "/v1/events?after=\(cursor)&wait=30", auth: APIHarness.reader)
            #expect(try await api.postV2(steps[1]).status == 200)
            let next = try page(try await polled)
            #expect(next.types == ["subscription.auto_renew_disabled"])
            #expect(Int(next.cursor)! > Int(first.cursor)!)

            // A duplicate delivery adds nothing.
            #expect(try await api.postV2(steps[1]).status == 200)
            #expect(try page(try await api.send("GET", "/v1/events?after=\(next.cursor)", auth: APIHarness.reader)).types.isEmpty)
        }
    }

    /// Events carry the customer's attributes as they are when read — in the feed and in a
    /// webhook delivery — and none once the customer is erased.
    @Test func eventsCarryTheCustomersAttributesAsTheyAreWhenSent() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let set = #"{"attributes": {"$email": "ana@example.com", "plan_hint": "team"}}"#
            #expect(try await api.send("PUT", "/v1/customers/u1/attributes", auth: APIHarness.writer, json: set).status == 200)
            #expect(try await api.postV2(notifications(token: token)[0]).status == 200)
            let feed = try page(try await api.send("GET", "/v1/events", auth: APIHarness.reader))
            #expect(feed.events.first?["attributes"] as? [String: String] == ["$email": "ana@example.com", "plan_hint": "team"])

            // Changed after the event was recorded: the event is sent with the values now.
            #expect(try await api.send("PUT", "/v1/customers/u1/attributes", auth: APIHarness.writer,
                json: #"{"attributes": {"plan_hint": null}}"#).status == 200)
            let again = try page(try await api.send("GET", "/v1/events", auth: APIHarness.reader))
            #expect(again.events.first?["attributes"] as? [String: String] == ["$email": "ana@example.com"])

            // A webhook delivery reads its event the same way.
            let store = api.ledger.store
            let endpoint = "https://hooks.example.com/e"
            #expect(try await store.fanOut(endpoint: endpoint, wants: { _, _ in true }, limit: 10, now: t0) == 0)
            #expect(try await api.postV2(notifications(token: token)[1]).status == 200)
            #expect(try await store.fanOut(endpoint: endpoint, wants: { _, _ in true }, limit: 10, now: t0) == 1)
            let claimed = try await store.claimDeliveries(endpoint: endpoint, owner: "t", now: t0, leaseUntil: t0 + 1000, limit: 10)
            #expect(claimed.map(\.event.attributes) == [["$email": "ana@example.com"]])

            // Erased: nothing of the customer's attributes is left to send.
            #expect(try await api.send("DELETE", "/v1/customers/u1", auth: APIHarness.admin).status == 200)
            let after = try page(try await api.send("GET", "/v1/events", auth: APIHarness.reader))
            #expect(!after.events.isEmpty)
            #expect(after.events.allSatisfy { ($0["attributes"] as? [String: String]) == [:] })
        }
    }

    @Test(arguments: [
        ("/v1/events?limit=0", APIHarness.reader, 400, "INVALID_LIMIT"),
        ("/v1/events?after=x", APIHarness.reader, 400, "INVALID_CURSOR"),
        ("/v1/events?wait=31", APIHarness.reader, 400, "INVALID_REQUEST"),
        ("/v1/events", "", 401, "UNAUTHORIZED"),
    ])
    func badRequests(path: String, auth: String, status: Int, code: String) async throws {
        try await APIHarness.run { api in
            let reply = try await api.send("GET", path, auth: auth.isEmpty ? nil : auth)
            #expect(reply.status == status)
            #expect(reply.json["code"] as? String == code)
        }
    }

    /// A backend's (`read`) or an operator's (`admin`) key reads the feed; a console key, a
    /// write-only key and a customer token do not.
    @Test func whichCredentialsReadTheFeed() async throws {
        var configuration = APIHarness.configuration()
        configuration.apiKeys += [
            APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]),
            APIKey(name: "poster", secret: "poster-secret-0123456789", scopes: [.write]),
        ]
        try await APIHarness.run(configuration: configuration) { api in
            let customer = "Bearer " + OfferSigningAPITests.tokens.sign(subject: "u1", expiresAt: t0 / 1000 + 60)
            var statuses: [Int] = []
            for auth in [APIHarness.reader, APIHarness.admin, "Bearer console-secret-0123456789", "Bearer poster-secret-0123456789", customer] {
                statuses.append(try await api.send("GET", "/v1/events", auth: auth).status)
            }
            #expect(statuses == [200, 200, 403, 403, 403])
        }
    }

    /// A server that is stopping answers an open long-poll at once (an empty page), rather than
    /// holding the shutdown for the rest of its wait.
    @Test func aLongPollEndsAtOnceWhenTheServerStops() async throws {
        try await APIHarness.run { api in
            let started = ContinuousClock.now
            async let polled = api.send("GET", "/v1/events?after=0&wait=30", auth: APIHarness.reader)
            try await Task.sleep(for: .milliseconds(200))
            api.ledger.ledger.events.close()
            let reply = try await polled
            #expect(reply.status == 200)
            #expect(try page(reply).types.isEmpty)
            #expect(ContinuousClock.now - started < .seconds(5))
            // Later long-polls do not wait either.
            let again = ContinuousClock.now
            #expect(try await api.send("GET", "/v1/events?after=0&wait=30", auth: APIHarness.reader).status == 200)
            #expect(ContinuousClock.now - again < .seconds(5))
        }
    }
}
