import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Synchronization
import Testing

/// Webhook endpoints that answer with a redirect or not at all: neither loses an event nor holds up
/// another endpoint's deliveries.
@Suite(.serialized) struct WebhookHostileEndpointTests {
    /// A loopback endpoint answering every POST with `answer` (after `hold` returns).
    final class Endpoint: Sendable {
        private let server: HTTPServer
        private let released = Mutex(false)
        let hits = Mutex(0)
        /// The bodies answered (not those still held).
        let answered = Mutex<[String]>([])

        /// - Parameter hanging: which requests get no answer until ``shutdown()``.
        init(hanging: @escaping @Sendable (String) -> Bool = { _ in false }, answer: @escaping @Sendable () -> Response) throws {
            let box = Mutex<Endpoint?>(nil)
            var routes = Router()
            routes.post("/hook") { request in
                guard let endpoint = box.withLock({ $0 }) else { return Response(status: 503) }
                endpoint.hits.withLock { $0 += 1 }
                let body = String(decoding: request.body, as: UTF8.self)
                while hanging(body), !endpoint.released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(50)) }
                endpoint.answered.withLock { $0.append(body) }
                return answer()
            }
            server = try HTTPServer.quietLoopback(routes)
            box.withLock { $0 = self }
        }

        var url: URL { URL(string: "http://127.0.0.1:\(server.port)/hook")! }

        func shutdown() async {
            released.withLock { $0 = true }
            await server.shutdown()
        }
    }

    static func endpoint(_ url: URL, timeoutSeconds: Int = 5) throws -> WebhookEndpoint {
        WebhookEndpoint(
            url: url, secretKey: try #require(WebhookSecret.key(WebhookReceiver.secret)), timeoutSeconds: timeoutSeconds,
            retryScheduleSeconds: [60], maxRetryHours: 72)
    }

    @Test(arguments: [302, 307])
    func aRedirectIsAFailedAttemptAndNeverFollowed(status: Int) async throws {
        let target = try WebhookReceiver(failing: 0)
        let redirector = try Endpoint { Response(status: status, headers: ["Location": target.url.absoluteString]) }
        var configuration = APIHarness.configuration()
        configuration.webhooks = [try Self.endpoint(redirector.url)]
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            #expect(try await api.send("POST", "/v1/webhooks/test", auth: APIHarness.admin).status == 202)
            #expect(try await dispatcher.runDue() == .init(retried: 1))
            let reply = try await api.send("GET", "/v1/webhooks/deliveries?status=pending", auth: APIHarness.admin)
            let pending = try #require((reply.json["deliveries"] as? [[String: Any]])?.first, "\(reply.text)")
            #expect(pending["lastError"] as? String == "redirect (\(status)) not followed")
            #expect(pending["lastStatus"] as? Int == status)
            #expect(redirector.hits.withLock { $0 } == 1)
            #expect(target.deliveries.isEmpty, "nothing reached the redirect's target")
        }
        await redirector.shutdown()
        await target.shutdown()
    }

    @Test func aHangingEndpointDoesNotHoldUpAHealthyOne() async throws {
        let hanging = try Endpoint(hanging: { _ in true }) { Response(status: 204) }
        let healthy = try WebhookReceiver(failing: 0)
        var configuration = APIHarness.configuration()
        configuration.webhooks = [try Self.endpoint(hanging.url, timeoutSeconds: 60), try Self.endpoint(healthy.url)]
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            let running = Task { await dispatcher.run() }
            defer { running.cancel() }
            for expected in 1...2 {
                #expect(try await api.send("POST", "/v1/webhooks/test", auth: APIHarness.admin).status == 202)
                let deadline = ContinuousClock.now + .seconds(5)
                while healthy.deliveries.count < expected, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(healthy.deliveries.count == expected, "event \(expected) reached the healthy endpoint within 5 s")
            }
            #expect(hanging.hits.withLock { $0 } >= 1, "the hanging endpoint holds an attempt open meanwhile")
            running.cancel()
            await running.value
        }
        await hanging.shutdown()
        await healthy.shutdown()
    }

    @Test func aHangingAttemptDoesNotHoldUpAnotherCustomersEvent() async throws {
        // The endpoint holds every delivery about u1 and answers the others at once.
        let endpoint = try Endpoint(hanging: { $0.contains(#""appUserId":"u1""#) }) { Response(status: 204) }
        var configuration = APIHarness.configuration()
        configuration.webhooks = [try Self.endpoint(endpoint.url, timeoutSeconds: 60)]
        try await APIHarness.run(configuration: configuration) { api in
            let dispatcher = try #require(api.application.webhooks)
            try await dispatcher.runDue()
            let running = Task { await dispatcher.run() }
            defer { running.cancel() }
            func subscribe(_ user: String) async throws {
                let token = try #require(try await api.customer(user).json["appAccountToken"] as? String)
                let t0 = APIHarness.start
                #expect(
                    try await api.postV2(
                        Apple.notification(
                            .subscribed, .initialBuy, uuid: "n-\(user)", signed: t0 - 1000,
                            transaction: Apple.transaction(otid: "o-\(user)", tid: "t-\(user)", purchase: t0 - 1000, expires: t0 + 86_400_000, token: token),
                            renewal: Apple.renewal(otid: "o-\(user)", signed: t0 - 1000))
                    ).status == 200)
            }
            try await subscribe("u1")
            var deadline = ContinuousClock.now + .seconds(5)
            while endpoint.hits.withLock({ $0 }) == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(endpoint.hits.withLock { $0 } == 1, "u1's event is being attempted (and held)")
            try await subscribe("u2")
            deadline = ContinuousClock.now + .seconds(5)
            while endpoint.answered.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            let answered = endpoint.answered.withLock { $0 }
            #expect(answered.count == 1 && answered.first?.contains(#""appUserId":"u2""#) == true, "u2's event arrived within 5 s")
            running.cancel()
            await running.value
        }
        await endpoint.shutdown()
    }
}
