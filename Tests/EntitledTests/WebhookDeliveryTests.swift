import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// Webhook delivery end to end: the server's dispatcher posting to a receiver on loopback, with
/// retries on the injected clock, per-customer order and the admin API.
@Suite struct WebhookDeliveryTests {
    static let day: Int64 = 86_400_000

    static func configuration(_ receiver: WebhookReceiver, schedule: [Int], maxRetryHours: Int = 72) throws -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.webhooks = [
            WebhookEndpoint(
                url: receiver.url, secretKey: try #require(WebhookSecret.key(WebhookReceiver.secret)), timeoutSeconds: 5,
                retryScheduleSeconds: schedule, maxRetryHours: maxRetryHours)
        ]
        return configuration
    }

    /// Two events of u1 (started, auto-renew disabled) and one of u2 (started).
    func ingest(_ api: APIHarness) async throws {
        let t0 = APIHarness.start
        let d = Self.day
        for (user, otid) in [("u1", "o1"), ("u2", "o2")] {
            let token = try #require(try await api.customer(user).json["appAccountToken"] as? String)
            #expect(
                try await api.postV2(
                    Apple.notification(
                        .subscribed, .initialBuy, uuid: "n-\(user)", signed: t0 - 40 * d,
                        transaction: Apple.transaction(otid: otid, tid: "t-\(user)", purchase: t0 - 40 * d, expires: t0 + 10 * d, token: token),
                        renewal: Apple.renewal(otid: otid, signed: t0 - 40 * d))
                ).status == 200)
            if user == "u1" {
                #expect(
                    try await api.postV2(
                        Apple.notification(
                            .didChangeRenewalStatus, .autoRenewDisabled, uuid: "n-off", signed: t0 - 5 * d,
                            transaction: Apple.transaction(
                                otid: otid, tid: "t-u1", purchase: t0 - 40 * d, expires: t0 + 10 * d, signed: t0 - 5 * d, token: token),
                            renewal: Apple.renewal(otid: otid, autoRenew: false, signed: t0 - 5 * d))
                    ).status == 200)
            }
        }
    }

    static func milliseconds(_ text: String) -> Int64? {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return parser.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    func deliveries(_ api: APIHarness, _ query: String) async throws -> [[String: Any]] {
        let reply = try await api.send("GET", "/v1/webhooks/deliveries\(query)", auth: APIHarness.admin)
        #expect(reply.status == 200, "\(reply.text)")
        return try #require(reply.json["deliveries"] as? [[String: Any]])
    }

    @Test func retriesFollowTheScheduleAndEachCustomerStaysInOrder() async throws {
        let receiver = try WebhookReceiver(failing: 2)
        defer { Task { await receiver.shutdown() } }
        try await APIHarness.run(configuration: try Self.configuration(receiver, schedule: [30, 120])) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()  // the endpoint starts here: later events are its
            try await ingest(api)

            // The first event of each customer is attempted and fails; u1's second waits behind its first.
            var report = try await dispatcher.runDue()
            #expect(report == .init(retried: 2))
            let pending = try await deliveries(api, "?status=pending")
            #expect(pending.count == 3)
            let now = api.clock.nowMilliseconds()
            for delivery in pending where delivery["attempts"] as? Int == 1 {
                let next = try #require((delivery["nextAttemptAt"] as? String).flatMap(Self.milliseconds))
                #expect((now + 30_000)...(now + 33_000) ~= next, "30 s plus up to 10 % jitter")
                #expect(delivery["lastStatus"] as? Int == 500)
            }

            // Not due yet: nothing is attempted.
            api.clock.advance(by: 29_000)
            report = try await dispatcher.runDue()
            #expect(report == .init())
            // Due: both retries succeed, and u1's second event follows its first.
            api.clock.advance(by: 4_000)
            report = try await dispatcher.runDue()
            #expect(report == .init(delivered: 3))

            let received = receiver.deliveries
            #expect(received.count == 5)
            let key = try #require(WebhookSecret.key(WebhookReceiver.secret))
            for delivery in received {
                let expected = WebhookSignature.signature(
                    key: key, id: delivery.id, timestamp: Int64(delivery.timestamp) ?? 0, body: delivery.body)
                #expect(delivery.signature == expected)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(delivery.body)) as? [String: Any])
                #expect(json["id"] as? String == delivery.id)
            }
            // A failed attempt and its retry carry the same id.
            let failedIds = received.filter { $0.answered == 500 }.map(\.id)
            let deliveredIds = received.filter { $0.answered == 204 }.map(\.id)
            #expect(Set(failedIds).isSubset(of: Set(deliveredIds)))
            let types = try received.filter { $0.answered == 204 }.map { delivery -> String in
                let json = try #require(try JSONSerialization.jsonObject(with: Data(delivery.body)) as? [String: Any])
                return "\(json["appUserId"] as? String ?? "") \(json["type"] as? String ?? "")"
            }
            let u1 = types.filter { $0.hasPrefix("u1 ") }
            #expect(u1 == ["u1 subscription.started", "u1 subscription.auto_renew_disabled"])
            #expect(try await deliveries(api, "?status=delivered").count == 3)
            // The console's customer page lists u1's deliveries, newest first.
            let timeline = try await api.send("GET", "/v1/console/customers/u1/timeline", auth: APIHarness.admin).json
            let mine = try #require(timeline["deliveries"] as? [[String: Any]])
            #expect(mine.compactMap { $0["eventType"] as? String } == ["subscription.auto_renew_disabled", "subscription.started"])
            #expect(mine.allSatisfy { $0["appUserId"] as? String == "u1" && $0["status"] as? String == "delivered" })

            // A retry by hand re-delivers; a test event reaches the endpoint too.
            let id = try #require(try await deliveries(api, "?status=delivered&limit=1").first?["id"] as? String)
            let retried = try await api.send("POST", "/v1/webhooks/deliveries/\(id)/retry", auth: APIHarness.admin)
            #expect(retried.status == 202 && retried.json["status"] as? String == "pending", "\(retried.text)")
            let test = try await api.send("POST", "/v1/webhooks/test", auth: APIHarness.admin)
            #expect(test.status == 202 && test.json["endpoints"] as? Int == 1, "\(test.text)")
            report = try await dispatcher.runDue()
            #expect(report == .init(delivered: 2))
            #expect(receiver.deliveries.contains { String(decoding: $0.body, as: UTF8.self).contains(#""type":"test""#) })
        }
    }

    @Test func anEndpointThatNeverAnswers2xxEndsFailedAfterMaxRetryHours() async throws {
        let receiver = try WebhookReceiver(failing: .max)
        defer { Task { await receiver.shutdown() } }
        try await APIHarness.run(configuration: try Self.configuration(receiver, schedule: [60, 600], maxRetryHours: 1)) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            #expect(try await api.send("POST", "/v1/webhooks/test", auth: APIHarness.admin).status == 202)
            var attempts = 0
            while try await deliveries(api, "?status=failed").isEmpty, attempts < 20 {
                try await dispatcher.runDue()
                attempts += 1
                api.clock.advance(by: 660_000)
            }
            // At 0, then after ~60 s and ~600 s (the last wait repeats), seen every 660 s here: the
            // sixth's next wait would end past the hour, so it is the last.
            let failed = try #require(try await deliveries(api, "?status=failed").first)
            let made = try #require(failed["attempts"] as? Int)
            #expect((6...7).contains(made), "\(failed)")
            #expect(receiver.deliveries.count == made)
            #expect(failed["lastError"] as? String == "HTTP 500")
            // The console's health page shows it: one failed, no backlog, nothing delivered.
            let health = try await api.send("GET", "/v1/console/health", auth: APIHarness.admin).json
            let status = try #require((health["webhooks"] as? [[String: Any]])?.first)
            #expect(status["endpoint"] as? String == receiver.url.absoluteString)
            #expect(status["failed"] as? Int == 1 && status["pending"] as? Int == 0 && status["lastDeliveredAt"] == nil)
        }
    }

    @Test(arguments: [
        ("GET", "/v1/webhooks/deliveries?status=lost", 400, "INVALID_REQUEST"),
        ("GET", "/v1/webhooks/deliveries?cursor=abc", 400, "INVALID_CURSOR"),
        ("GET", "/v1/webhooks/deliveries?limit=0", 400, "INVALID_LIMIT"),
        ("POST", "/v1/webhooks/deliveries/x/retry", 400, "INVALID_PATH_PARAMETER"),
        ("POST", "/v1/webhooks/deliveries/42/retry", 404, "NOT_FOUND"),
    ])
    func badAdminRequests(method: String, path: String, status: Int, code: String) async throws {
        try await APIHarness.run { api in
            let reply = try await api.send(method, path, auth: APIHarness.admin)
            #expect(reply.status == status && reply.json["code"] as? String == code, "\(reply.text)")
            #expect(try await api.send(method, path, auth: APIHarness.reader).status == 403)
        }
    }
}
