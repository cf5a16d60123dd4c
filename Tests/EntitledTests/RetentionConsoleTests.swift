import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// `GET /v1/console/retention`: the console's view of each app's retention messaging, read live
/// from the simulator's fake Retention Messaging API through the server's own Server API client.
@Suite(.serialized) struct RetentionConsoleTests {
    @Test func theConsoleShowsEachAppsMessagesImagesAndRealtimeURL() async throws {
        var app: App?
        try await ReconcileScenarioTests.withWorld(configureApp: { app = $0 }) { world in
            // Set up as an operator would, with `entitled retention`'s logic and the app's key.
            var configuration = Configuration()
            configuration.apps = [try #require(app)]
            let message = "0f6a4b55-1b1e-4c1f-9d2e-6a7b8c9d0e1f"
            func retention(_ operation: RetentionOperation) async throws {
                _ = try await runRetention(operation, configuration: configuration, bundleId: nil, environment: nil, clock: world.simulator.clock)
            }
            try await retention(.uploadMessage(id: message, UploadMessageRequestBody(header: "Before you go", body: "Half price for 3 months.")))
            await world.simulator.retentionMessaging.recordPassedPerformanceTest()
            try await retention(.setURL("https://entitled.example.com/v1/apple/retention"))

            let reply = try await Loopback.send(
                port: world.port, "GET", "/v1/console/retention", headers: ["Authorization": "Bearer console-secret-0123456789"])
            #expect(reply.status == 200)
            let apps = try #require(reply.json["apps"] as? [[String: Any]])
            #expect(apps.count == 1)
            #expect(apps.first?["bundleId"] as? String == Catalog.demo.bundleId)
            #expect(apps.first?["environment"] as? String == "Production")
            #expect(apps.first?["realtimeURL"] as? String == "https://entitled.example.com/v1/apple/retention")
            let messages = try #require(apps.first?["messages"] as? [[String: String]])
            #expect(messages == [["messageIdentifier": message, "messageState": "APPROVED"]])
            #expect((apps.first?["images"] as? [Any])?.isEmpty == true)
            #expect(apps.first?["error"] == nil)

            // Apple's failure is the app's error, not the page's.
            await world.simulator.throttleServerAPI(requests: 1000)
            let throttled = try await Loopback.send(
                port: world.port, "GET", "/v1/console/retention", headers: ["Authorization": "Bearer console-secret-0123456789"])
            #expect(throttled.status == 200)
            let failed = try #require((throttled.json["apps"] as? [[String: Any]])?.first)
            #expect((failed["error"] as? String)?.hasPrefix("APPLE_RATE_LIMITED") == true)
            await world.simulator.throttleServerAPI(requests: 0)

            let anonymous = try await Loopback.send(port: world.port, "GET", "/v1/console/retention")
            #expect(anonymous.status == 401)
        }
    }
}
