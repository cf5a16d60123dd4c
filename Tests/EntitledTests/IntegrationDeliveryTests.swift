import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Synchronization
import Testing

/// Integrations end to end: events of real ingests delivered by the webhook dispatcher to one
/// loopback receiver per vendor, each checking method, path, auth and body; a 500 retried on the
/// injected clock, each customer's events in order, and the deliveries in the API and console.
@Suite(.serialized) struct IntegrationDeliveryTests {
    /// A vendor's receiver on loopback: answers 500 to its first `failures` requests, then 200.
    final class Receiver: Sendable {
        struct Received: Sendable {
            var method: String
            var path: String
            var query: [String: String]
            var authorization: String?
            var contentType: String?
            var body: [UInt8]
            var answered: Int
        }

        let failures: Int
        let received = Mutex<[Received]>([])
        let path: String
        private let server: HTTPServer

        init(path: String, failing failures: Int = 0) throws {
            self.failures = failures
            self.path = path
            let box = Mutex<Receiver?>(nil)
            var routes = Router()
            routes.post(path) { request in
                guard let receiver = box.withLock({ $0 }) else { return .text("not ready", status: 503) }
                return receiver.receive(request)
            }
            server = try HTTPServer.quietLoopback(routes)
            box.withLock { $0 = self }
        }

        func url(query: String = "") -> URL { URL(string: "http://127.0.0.1:\(server.port)\(path)\(query)")! }

        private func receive(_ request: Request) -> Response {
            received.withLock { received in
                let status = received.count < failures ? 500 : 200
                received.append(
                    Received(
                        method: "\(request.method)", path: request.path, query: request.query,
                        authorization: request.headers["authorization"], contentType: request.headers["content-type"], body: request.body,
                        answered: status))
                return .text("ok", status: status)
            }
        }

        func shutdown() async { await server.shutdown() }

        var all: [Received] { received.withLock { $0 } }
        /// The bodies answered 200, as JSON.
        var delivered: [Any] { all.filter { $0.answered == 200 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) } }
    }

    static func basic(_ key: String) -> String { "Basic " + Base64.encode(Array((key + ":").utf8)) }

    @Test func eachVendorReceivesTheIngestedEventsInItsFormatRetriedAndInOrder() async throws {
        let segment = try Receiver(path: "/v1/track", failing: 2)
        let amplitude = try Receiver(path: "/2/httpapi")
        let mixpanel = try Receiver(path: "/import")
        let posthog = try Receiver(path: "/capture/")
        let slack = try Receiver(path: "/services/T1/B1/hook-secret")
        let receivers = [segment, amplitude, mixpanel, posthog, slack]
        defer { Task { for receiver in receivers { await receiver.shutdown() } } }

        var configuration = APIHarness.configuration()
        configuration.integrations = [
            IntegrationEndpoint(kind: .segment, key: "seg-key", url: segment.url()),
            IntegrationEndpoint(kind: .amplitude, key: "amp-key", url: amplitude.url()),
            IntegrationEndpoint(kind: .mixpanel, key: "mp-token", url: mixpanel.url(query: "?strict=1")),
            IntegrationEndpoint(kind: .posthog, key: "phc-key", url: posthog.url()),
            IntegrationEndpoint(kind: .slack, key: slack.url().absoluteString, url: slack.url()),
        ]
        for index in configuration.integrations.indices {
            configuration.integrations[index].retryScheduleSeconds = [30]
        }
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks, "integrations alone start the dispatcher")
            try await dispatcher.runDue()  // the integrations start here: later events are theirs
            try await WebhookDeliveryTests().ingest(api)

            // Segment answers 500 to the first event of each customer; the others take all three.
            var report = try await dispatcher.runDue()
            #expect(report == .init(delivered: 12, retried: 2))
            api.clock.advance(by: 20_000)
            #expect(try await dispatcher.runDue() == .init())
            api.clock.advance(by: 14_000)
            report = try await dispatcher.runDue()
            #expect(report == .init(delivered: 3))

            for receiver in receivers {
                #expect(receiver.all.allSatisfy { $0.method == "POST" && $0.path == receiver.path && $0.contentType == "application/json" })
            }
            #expect(segment.all.count == 5 && segment.all.allSatisfy { $0.authorization == Self.basic("seg-key") })
            #expect(mixpanel.all.allSatisfy { $0.authorization == Self.basic("mp-token") && $0.query["strict"] == "1" })
            #expect(amplitude.all.allSatisfy { $0.authorization == nil })

            // Each vendor's body, and each customer's events in commit order.
            let order = ["subscription.started", "subscription.auto_renew_disabled"]
            let segments = segment.delivered.compactMap { $0 as? [String: Any] }
            #expect(segments.filter { $0["userId"] as? String == "u1" }.compactMap { $0["event"] as? String } == order)
            #expect(segments.filter { $0["userId"] as? String == "u2" }.compactMap { $0["event"] as? String } == ["subscription.started"])
            #expect(Set(segments.compactMap { $0["messageId"] as? String }).count == 3, "one messageId per event, the retry's included")

            let amplitudes = amplitude.delivered.compactMap { ($0 as? [String: Any]) }
            #expect(amplitudes.allSatisfy { $0["api_key"] as? String == "amp-key" })
            let ampEvents = amplitudes.compactMap { ($0["events"] as? [[String: Any]])?.first }
            #expect(ampEvents.filter { $0["user_id"] as? String == "u1" }.compactMap { $0["event_type"] as? String } == order)
            #expect(amplitudes.allSatisfy { (($0["options"] as? [String: Any])?["min_id_length"] as? Int) == 1 }, "u1 and u2 are short ids")

            let mixpanels = mixpanel.delivered.compactMap { ($0 as? [[String: Any]])?.first }
            #expect(
                mixpanels.filter { ($0["properties"] as? [String: Any])?["distinct_id"] as? String == "u1" }
                    .compactMap { $0["event"] as? String } == order)

            let posthogs = posthog.delivered.compactMap { $0 as? [String: Any] }
            #expect(posthogs.allSatisfy { $0["api_key"] as? String == "phc-key" && ($0["uuid"] as? String).flatMap(UUID.init) != nil })
            #expect(posthogs.filter { $0["distinct_id"] as? String == "u1" }.compactMap { $0["event"] as? String } == order)

            let texts = slack.delivered.compactMap { ($0 as? [String: Any])?["text"] as? String }
            #expect(texts.count == 3 && texts.allSatisfy { $0.contains("(customer u") })

            // The properties of the product the event is about, with its store and price.
            let started = try #require(posthogs.first { $0["distinct_id"] as? String == "u2" }?["properties"] as? [String: Any])
            #expect(started["store"] as? String == "appStore")
            #expect(started["productId"] as? String != nil)
            #expect(started["appAccountToken"] as? String != nil)

            // The deliveries API and the console show each integration, never its key.
            let reply = try await api.send("GET", "/v1/webhooks/deliveries?limit=50", auth: APIHarness.admin)
            let deliveries = try #require(reply.json["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 15)
            #expect(deliveries.allSatisfy { $0["status"] as? String == "delivered" })
            let identities = Set(configuration.integrations.map(\.identity))
            #expect(Set(deliveries.compactMap { $0["endpoint"] as? String }) == identities)
            let retried = deliveries.filter { ($0["endpoint"] as? String)?.hasPrefix("integration:segment:") == true && $0["attempts"] as? Int == 2 }
            #expect(retried.count == 2)
            #expect(!reply.text.contains("hook-secret") && !reply.text.contains("seg-key"))

            let health = try await api.send("GET", "/v1/console/health", auth: APIHarness.admin)
            let endpoints = try #require(health.json["webhooks"] as? [[String: Any]])
            #expect(endpoints.compactMap { $0["endpoint"] as? String } == configuration.integrations.map(\.identity))
            for endpoint in endpoints {
                #expect(endpoint["pending"] as? Int == 0)
                #expect(endpoint["lastDeliveredAt"] is String)
            }
            let timeline = try await api.send("GET", "/v1/console/customers/u1/timeline", auth: APIHarness.admin).json
            #expect((timeline["deliveries"] as? [[String: Any]])?.count == 10)
        }
    }

    @Test func sandboxEventsStayOutUnlessListed() async throws {
        let posthog = try Receiver(path: "/capture/")
        defer { Task { await posthog.shutdown() } }
        var configuration = APIHarness.configuration()
        configuration.integrations = [IntegrationEndpoint(kind: .posthog, key: "phc-key", url: posthog.url(), environments: ["Sandbox"])]
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            try await WebhookDeliveryTests().ingest(api)  // Production events
            #expect(try await dispatcher.runDue() == .init())
            #expect(posthog.all.isEmpty)
        }
    }

    @Test func theTestEventReachesTheIntegrationsThatListIt() async throws {
        let slack = try Receiver(path: "/services/T1/B1/hook-secret")
        let posthog = try Receiver(path: "/capture/")
        defer { Task { await slack.shutdown(); await posthog.shutdown() } }
        var configuration = APIHarness.configuration()
        configuration.integrations = [
            IntegrationEndpoint(kind: .slack, key: slack.url().absoluteString, url: slack.url(), events: ["test"]),
            IntegrationEndpoint(kind: .posthog, key: "phc-key", url: posthog.url(), events: ["subscription.started"]),
        ]
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            let reply = try await api.send("POST", "/v1/webhooks/test", auth: APIHarness.admin)
            #expect(reply.status == 202 && reply.json["endpoints"] as? Int == 1)
            #expect(try await dispatcher.runDue() == .init(delivered: 1))
            let texts = slack.delivered.compactMap { ($0 as? [String: Any])?["text"] as? String }
            #expect(texts == ["Test (customer entitled)"])
            #expect(posthog.all.isEmpty)
        }
    }
}
