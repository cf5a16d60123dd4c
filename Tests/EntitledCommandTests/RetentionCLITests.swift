import AppStore
import AppStoreSimulator
import EntitledCrypto
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Synchronization
import Testing

/// `entitled retention …` end to end: the built binary against the simulator's fake Retention
/// Messaging API on loopback, configured as an operator would (a file naming the `.p8` key).
@Suite(.serialized) struct RetentionCLITests {
    /// The fake Apple, a configuration file pointing at it, and a Get Retention Message endpoint.
    struct World {
        let simulator: Simulator
        let apple: HTTPServer
        let endpoint: HTTPServer
        let folder: URL
        /// Opened: the realtime endpoint answers.
        let gate: Gate
        var config: String { folder.appendingPathComponent("entitled.json").path }
        var endpointURL: String { "http://127.0.0.1:\(endpoint.port)/v1/apple/retention" }

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-retention-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let clock = AppStoreSimulator.VirtualClock(milliseconds: 1_768_435_200_000)
            simulator = Simulator(catalog: Catalog.demo, environment: .sandbox, ca: try SimulatorCA.ephemeral(), clock: clock, transport: nil)
            apple = try HTTPServer.fakeServerAPI(simulator, keyFolder: folder)
            var answer = Router()
            // Answers only once the gate opens, so a performance test is PENDING until the test says.
            let gate = Gate()
            self.gate = gate
            answer.add(
                .post, "/v1/apple/retention",
                .async { _ in
                    while !gate.open.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
                    return Response.json(bytes: Array(#"{"message":{"messageIdentifier":"m"}}"#.utf8))
                })
            endpoint = try HTTPServer.quietLoopback(answer)
            let file = """
                {"apiKeys": [{"name": "backend", "secret": "env:RETENTION_TEST_UNSET_SECRET", "scopes": ["read"]}],
                 "apps": [{"bundleId": "\(Catalog.demo.bundleId)", "environments": ["Sandbox"],
                  "serverAPI": {"keyId": "ABC123DEFG", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                                "privateKeyFile": "SubscriptionKey_ABC123DEFG.p8", "baseURL": "http://127.0.0.1:\(apple.port)"}}]}
                """
            try Data(file.utf8).write(to: folder.appendingPathComponent("entitled.json"))
        }

        func run(_ arguments: [String]) async throws -> CLI.Result {
            try await CLI.run(["retention"] + arguments + ["--config", config])
        }

        func stop() async {
            await apple.shutdown()
            await endpoint.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static let message = "0f6a4b55-1b1e-4c1f-9d2e-6a7b8c9d0e1f"
    static let image = "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

    @Test func imagesMessagesAndTheDefaultAreManagedFromTheCommandLine() async throws {
        let world = try World()
        await world.simulator.retentionMessaging.setReviewDelay(milliseconds: 3_600_000)
        let png = world.folder.appendingPathComponent("hero.png")
        func be(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + Array("IHDR".utf8) + be(3840) + be(1200) + [8, 2, 0, 0, 0]).write(to: png)

        let uploadedImage = try await world.run(["images", "upload", Self.image, png.path])
        #expect(uploadedImage.status == 0, "\(uploadedImage.stderr)")
        #expect(uploadedImage.stdout.contains("uploaded image \(Self.image)"))
        let uploaded = try await world.run([
            "messages", "upload", Self.message, "--header", "Before you go", "--body", "Three months at half price.", "--image", Self.image,
            "--alt-text", "A mountain", "--header-position", "ABOVE_IMAGE",
        ])
        #expect(uploaded.status == 0, "\(uploaded.stderr)")
        let pending = try await world.run(["messages", "list"])
        #expect(pending.stdout == "\(Self.message)  PENDING\n")
        let images = try await world.run(["images", "list"])
        #expect(images.stdout == "\(Self.image)  PENDING  FULL_SIZE\n")

        // Apple refuses a default message that is not approved yet: exit 1 with Apple's code.
        let early = try await world.run(["default", "set", "pro.monthly", "en-US", Self.message])
        #expect(early.status == 1)
        #expect(early.stderr.contains("4030017"))
        world.simulator.clock.advance(milliseconds: 3_600_000)
        #expect(try await world.run(["messages", "list"]).stdout == "\(Self.message)  APPROVED\n")
        #expect(try await world.run(["default", "set", "pro.monthly", "en-US", Self.message]).status == 0)
        #expect(try await world.run(["default", "get", "pro.monthly", "en-US"]).stdout == Self.message + "\n")
        #expect(await world.simulator.retentionMessaging.defaultMessage(productId: "pro.monthly", locale: "en-US") == Self.message)

        let inUse = try await world.run(["images", "delete", Self.image])
        #expect(inUse.status == 1 && inUse.stderr.contains("4030019"))
        #expect(try await world.run(["default", "delete", "pro.monthly", "en-US"]).status == 0)
        #expect(try await world.run(["messages", "delete", Self.message]).status == 0)
        #expect(try await world.run(["images", "delete", Self.image]).status == 0)
        #expect(try await world.run(["messages", "list"]).stdout == "no messages\n")
        let gone = try await world.run(["default", "get", "pro.monthly", "en-US"])
        #expect(gone.status == 1 && gone.stderr.contains("APPLE_NOT_FOUND"))
        await world.stop()
    }

    @Test func aMessageWithBulletPointsIsUploadedFromAFile() async throws {
        let world = try World()
        let icon = world.folder.appendingPathComponent("icon.png")
        func be(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + Array("IHDR".utf8) + be(96) + be(96) + [8, 2, 0, 0, 0]).write(to: icon)
        #expect(try await world.run(["images", "upload", Self.image, icon.path, "--size", "bullet_point"]).status == 0)
        let body = world.folder.appendingPathComponent("message.json")
        try Data(
            #"""
            {"header": "Before you go", "body": "Your plan includes:",
             "bulletPoints": [{"text": "Offline maps", "imageIdentifier": "\#(Self.image)", "altText": "map"},
                              {"text": "Sync", "imageIdentifier": "\#(Self.image)", "altText": "sync"}]}
            """#.utf8
        ).write(to: body)
        let uploaded = try await world.run(["messages", "upload", Self.message, "--file", body.path])
        #expect(uploaded.status == 0, "\(uploaded.stderr)")
        #expect(try await world.run(["messages", "list"]).stdout == "\(Self.message)  APPROVED\n")
        #expect(try await world.run(["images", "list"]).stdout == "\(Self.image)  APPROVED  BULLET_POINT\n")
        // The icon is in use by the message's bullet points.
        #expect(try await world.run(["images", "delete", Self.image]).stderr.contains("4030019"))
        let both = try await world.run(["messages", "upload", Self.message, "--file", body.path, "--header", "x"])
        #expect(both.status == 2 && both.stderr.contains("--file replaces"))
        await world.stop()
    }

    @Test func theRealtimeURLIsSetAndAPerformanceTestRunsAgainstIt() async throws {
        let world = try World()
        await world.simulator.retentionMessaging.setPerformanceTestConfig(
            PerformanceTestConfig(maxConcurrentRequests: 2, totalRequests: 8, totalDuration: 60_000, responseTimeThreshold: 20_000, successRateThreshold: 95))
        var customer = ActionRequest("customer")
        customer.customer = "alice"
        _ = try await world.simulator.perform(customer)
        var buy = ActionRequest("purchase")
        buy.customer = "alice"
        buy.product = "pro.monthly"
        _ = try await world.simulator.perform(buy)
        let original = try #require(await world.simulator.store.transactionOrder.first)

        let missing = try await world.run(["url", "get"])
        #expect(missing.status == 1 && missing.stderr.contains("4040021"))
        #expect(try await world.run(["url", "set", world.endpointURL]).stdout == "Sandbox realtime URL: \(world.endpointURL)\n")
        #expect(try await world.run(["url", "get"]).stdout == world.endpointURL + "\n")
        let started = try await world.run(["performance-test", "start", original])
        #expect(started.status == 0, "\(started.stderr)")
        let firstLine: Substring? = started.stdout.split(separator: "\n").first
        let lastWord: String? = firstLine?.split(separator: " ").last.map(String.init)
        let requestId: String = try #require(lastWord)
        #expect(try await world.run(["performance-test", "result", requestId]).stdout.hasPrefix("result      PENDING\n"))
        async let waited = world.run(["performance-test", "result", requestId, "--wait"])
        try await Task.sleep(for: .seconds(1))
        world.gate.open.withLock { $0 = true }
        let result = try await waited
        #expect(result.stdout.hasPrefix("result      PASS\n"), "\(result.stdout)")
        #expect(result.stdout.contains("successRate 100%   numPending 0"))
        #expect(result.stdout.contains("failures    none"))
        #expect(try await world.run(["url", "delete"]).status == 0)
        await world.stop()
    }

    @Test(arguments: [
        (["messages"], "missing verb"),
        (["messages", "rename"], "unknown verb 'rename'"),
        (["bogus", "list"], "expected one of"),
        (["messages", "upload", "id"], "--header and --body"),
        (["images", "upload", "id", "/nonexistent.png"], "cannot read /nonexistent.png"),
        (["default", "set", "pro.monthly", "en-US"], "expected PRODUCT_ID LOCALE MESSAGE_ID"),
        (["url", "get", "--environment", "Xcode"], "--environment"),
        (["images", "upload", "id", "f.png", "--size", "HUGE"], "--size"),
    ])
    func badUsageExitsTwo(arguments: [String], mention: String) async throws {
        let world = try World()
        let result = try await world.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(mention), "\(result.stderr)")
        await world.stop()
    }

    @Test func helpListsEveryGroup() async throws {
        let help = try await CLI.run(["retention", "--help"])
        #expect(help.status == 0)
        for group in ["messages upload", "images upload", "default set", "url set", "performance-test start", "performance-test result"] {
            #expect(help.stdout.contains(group), "\(group)")
        }
    }
}

/// A flag shared with a server's handler.
final class Gate: Sendable {
    let open = Mutex(false)
}
