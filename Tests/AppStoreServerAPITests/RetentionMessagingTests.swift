import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import EntitledCrypto
import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing

/// The first bytes of a PNG: signature and IHDR with `width` × `height` (the fake reads no further).
func pngHeader(width: Int, height: Int) -> [UInt8] {
    func be(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + Array("IHDR".utf8) + be(width) + be(height) + [8, 2, 0, 0, 0]
}

/// A Get Retention Message endpoint on loopback: verifies each realtime request and answers with `status`.
final class RealtimeEndpoint: Sendable {
    final class Received: Sendable {
        let list = Mutex<[DecodedRealtimeRequestBody]>([])
    }

    let server: HTTPServer
    private let received = Received()
    var requests: [DecodedRealtimeRequestBody] { received.list.withLock { $0 } }
    var url: String { "http://127.0.0.1:\(server.port)/v1/apple/retention" }

    init(verifier: SignedDataVerifier, status: Int = 200) throws {
        var router = Router()
        let received = self.received
        router.add(
            .post, "/v1/apple/retention",
            .async { request in
                let body = try JSONDecoder().decode([String: String].self, from: Data(request.body))
                let verified = try await verifier.verifyPayload(body["signedPayload"] ?? "", as: DecodedRealtimeRequestBody.self)
                received.list.withLock { $0.append(verified.value) }
                return Response.json(bytes: Array(#"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#.utf8), status: status)
            })
        server = try HTTPServer.quietLoopback(router)
    }
}

/// `body`'s Apple error code (recording an issue when it did not fail with one).
func appleCode(_ body: () async throws -> Void) async -> APIErrorCode? {
    await apiError(body)?.appleErrorCode
}

@Suite(.serialized) struct RetentionMessagingClientTests {
    let messageId = "0f6a4b55-1b1e-4c1f-9d2e-6a7b8c9d0e1f"
    let otherId = "9d2e6a7b-8c9d-4e1f-8f6a-4b551b1e4c1f"
    let imageId = "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

    @Test func messagesAreUploadedReviewedListedAndDeleted() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        await apple.simulator.retentionMessaging.setReviewDelay(milliseconds: 60_000)
        let client = apple.client()
        let message = UploadMessageRequestBody(header: "Before you go", body: "Keep your streak: 3 months at half price.")
        try await client.uploadMessage(messageIdentifier: messageId, message)
        try await client.uploadMessage(messageIdentifier: otherId, message)
        #expect(try await client.messageList() == [
            GetMessageListResponseItem(messageIdentifier: messageId, messageState: .pending),
            GetMessageListResponseItem(messageIdentifier: otherId, messageState: .pending),
        ])
        apple.simulator.clock.advance(milliseconds: 60_000)
        await apple.simulator.retentionMessaging.review(message: otherId, approved: false)
        #expect(try await client.messageList().map(\.messageState) == [.approved, .rejected])
        #expect(await appleCode { try await client.uploadMessage(messageIdentifier: messageId, message) } == .messageAlreadyExists)
        try await client.deleteMessage(messageIdentifier: messageId)
        #expect(try await client.messageList().map(\.messageIdentifier) == [otherId])
        let missing = await apiError { try await client.deleteMessage(messageIdentifier: messageId) }
        #expect(missing?.appleErrorCode == .messageNotFound)
        #expect(missing?.code == "APPLE_NOT_FOUND")
    }

    @Test(arguments: [
        (UploadMessageRequestBody(header: String(repeating: "h", count: 67), body: "b"), APIErrorCode.headerTooLong),
        (UploadMessageRequestBody(header: "h", body: String(repeating: "b", count: 145)), .bodyTooLong),
        (UploadMessageRequestBody(header: "h", body: "b", headerPosition: .aboveImage), .badRequestAboveImageRequiresAnImage),
        (UploadMessageRequestBody(header: "h", body: "b", image: UploadMessageImage(imageIdentifier: "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", altText: "x")), .imageNotFound),
        (UploadMessageRequestBody(header: "h", body: "b", bulletPoints: Array(repeating: BulletPoint(text: "t"), count: 6)), .badRequestTooManyBulletPoints),
    ])
    func badMessagesAreRefusedWithApplesCodes(message: UploadMessageRequestBody, code: APIErrorCode) async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        #expect(await appleCode { try await apple.client().uploadMessage(messageIdentifier: messageId, message) } == code)
        #expect(try await apple.client().messageList().isEmpty)
    }

    @Test func imagesAreUploadedAsPNGAndAnImageInUseIsKept() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        let client = apple.client()
        try await client.uploadImage(imageIdentifier: imageId, png: pngHeader(width: 3840, height: 800))
        try await client.uploadImage(imageIdentifier: otherId, png: pngHeader(width: 128, height: 128), imageSize: .bulletPoint)
        #expect(try await client.imageList() == [
            GetImageListResponseItem(imageIdentifier: imageId, imageState: .approved, imageSize: .fullSize),
            GetImageListResponseItem(imageIdentifier: otherId, imageState: .approved, imageSize: .bulletPoint),
        ])
        #expect(await appleCode { try await client.uploadImage(imageIdentifier: messageId, png: Array("GIF89a".utf8)) } == .invalidImage)
        #expect(await appleCode { try await client.uploadImage(imageIdentifier: messageId, png: pngHeader(width: 1024, height: 800)) } == .invalidImage)
        #expect(await appleCode { try await client.uploadImage(imageIdentifier: imageId, png: pngHeader(width: 3840, height: 800)) } == .imageAlreadyExists)
        try await client.uploadMessage(
            messageIdentifier: messageId,
            UploadMessageRequestBody(
                header: "h", body: "b", image: UploadMessageImage(imageIdentifier: imageId, altText: "A mountain"), headerPosition: .aboveImage,
                bulletPoints: [BulletPoint(text: "Offline maps", imageIdentifier: otherId, altText: "map")]))
        #expect(await appleCode { try await client.deleteImage(imageIdentifier: imageId) } == .imageInUse)
        #expect(await appleCode { try await client.deleteImage(imageIdentifier: otherId) } == .imageInUse)
        try await client.deleteMessage(messageIdentifier: messageId)
        try await client.deleteImage(imageIdentifier: imageId)
        #expect(try await client.imageList().map(\.imageIdentifier) == [otherId])
        #expect(await appleCode { try await client.deleteImage(imageIdentifier: imageId) } == .imageNotFound)
    }

    @Test func theDefaultMessageNeedsAnApprovedMessage() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        await apple.simulator.retentionMessaging.setReviewDelay(milliseconds: 1000)
        let client = apple.client()
        #expect(await appleCode { try await client.defaultMessage(productId: "pro.monthly", locale: "en-US") } == .defaultMessageNotFound)
        #expect(
            await appleCode { try await client.configureDefaultMessage(productId: "pro.monthly", locale: "en-US", messageIdentifier: messageId) }
                == .messageNotFound)
        try await client.uploadMessage(messageIdentifier: messageId, UploadMessageRequestBody(header: "h", body: "b"))
        #expect(
            await appleCode { try await client.configureDefaultMessage(productId: "pro.monthly", locale: "en-US", messageIdentifier: messageId) }
                == .messageNotApproved)
        apple.simulator.clock.advance(milliseconds: 1000)
        try await client.configureDefaultMessage(productId: "pro.monthly", locale: "en-US", messageIdentifier: messageId)
        #expect(try await client.defaultMessage(productId: "pro.monthly", locale: "en-US") == messageId)
        #expect(await appleCode { try await client.defaultMessage(productId: "pro.monthly", locale: "fr-FR") } == .defaultMessageNotFound)
        #expect(
            await appleCode { try await client.configureDefaultMessage(productId: "pro.monthly", locale: "english!", messageIdentifier: messageId) }
                == .invalidLocale)
        #expect(
            await appleCode { try await client.configureDefaultMessage(productId: "nope", locale: "en-US", messageIdentifier: messageId) }
                == .invalidProductId)
        try await client.deleteDefaultMessage(productId: "pro.monthly", locale: "en-US")
        #expect(await appleCode { try await client.defaultMessage(productId: "pro.monthly", locale: "en-US") } == .defaultMessageNotFound)
    }

    @Test func theRealtimeURLIsConfiguredReadAndDeleted() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        let client = apple.client()
        #expect(await appleCode { _ = try await client.realtimeURL() } == .realtimeURLNotFound)
        #expect(await appleCode { try await client.configureRealtimeURL("http://example.com/retention") } == .badRequestRealtimeURL)
        try await client.configureRealtimeURL("https://entitled.example.com/v1/apple/retention")
        #expect(try await client.realtimeURL() == "https://entitled.example.com/v1/apple/retention")
        try await client.deleteRealtimeURL()
        #expect(await appleCode { try await client.deleteRealtimeURL() } == .realtimeURLNotFound)
        // Refused before sending: Apple's limit is 256 characters.
        let long = "https://example.com/" + String(repeating: "a", count: 240)
        #expect(await apiError { try await client.configureRealtimeURL(long) }?.code == "APPLE_INVALID_REQUEST")
    }

    @Test func productionNeedsAPassedPerformanceTestBeforeItsURL() async throws {
        let apple = try FakeAppleOnLoopback(environment: .production)
        defer { Task { await apple.server.shutdown() } }
        let client = apple.client()
        #expect(await appleCode { try await client.configureRealtimeURL("https://entitled.example.com/v1/apple/retention") } == .forbiddenNoPassingTest)
        await apple.simulator.retentionMessaging.recordPassedPerformanceTest()
        try await client.configureRealtimeURL("https://entitled.example.com/v1/apple/retention")
        #expect(try await client.realtimeURL() == "https://entitled.example.com/v1/apple/retention")
    }

    /// Sets the fake's performance test to `requests` requests, `concurrency` at once, and returns the
    /// original transaction id of a new active subscription.
    func subscriber(_ apple: FakeAppleOnLoopback, requests: Int64, concurrency: Int64) async throws -> String {
        await apple.simulator.retentionMessaging.setPerformanceTestConfig(
            PerformanceTestConfig(
                maxConcurrentRequests: concurrency, totalRequests: requests, totalDuration: 60_000, responseTimeThreshold: 2000,
                successRateThreshold: 95))
        try await apple.act("customer", customer: "alice")
        try await apple.act("purchase", customer: "alice", product: "pro.monthly")
        return try #require(await apple.simulator.store.transactionOrder.first)
    }

    /// Polls the result until it is no longer PENDING (real time: the fake really calls the endpoint).
    func finished(_ client: AppStoreServerAPIClient, _ requestId: String) async throws -> PerformanceTestResultResponse {
        for _ in 0..<400 {
            let result = try await client.performanceTestResult(requestId: requestId)
            if result.result != .pending { return result }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("the performance test did not finish")
        return try await client.performanceTestResult(requestId: requestId)
    }

    @Test func aPerformanceTestCallsTheRealtimeURLWithSignedRequestsAndPasses() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        let endpoint = try RealtimeEndpoint(verifier: apple.verifier)
        defer { Task { await endpoint.server.shutdown() } }
        let original = try await subscriber(apple, requests: 20, concurrency: 4)
        let client = apple.client()
        #expect(await appleCode { _ = try await client.initiatePerformanceTest(originalTransactionId: original) } == .realtimeURLNotFound)
        try await client.configureRealtimeURL(endpoint.url)
        #expect(await appleCode { _ = try await client.initiatePerformanceTest(originalTransactionId: "404") } == .invalidPerformanceTestRequest)
        let started = try await client.initiatePerformanceTest(originalTransactionId: original)
        #expect(started.config?.totalRequests == 20)
        let result = try await finished(client, try #require(started.requestId))
        #expect(result.result == .pass)
        #expect(result.successRate == 100)
        #expect(result.numPending == 0)
        #expect(result.failures == [:])
        #expect(result.target == endpoint.url)
        let times = try #require(result.responseTimes)
        #expect((times.p50 ?? -1) >= 0 && (times.p50 ?? 0) <= (times.p99 ?? -1))
        let requests = endpoint.requests
        #expect(requests.count == 20)
        #expect(Set(requests.compactMap(\.requestIdentifier)).count == 20)
        #expect(requests.allSatisfy { $0.originalTransactionId == original && $0.productId == "pro.monthly" && $0.environment == .sandbox })
        #expect(requests.allSatisfy { $0.appAppleId == 1_234_567_890 && $0.userLocale == "en-US" })
    }

    @Test func aPerformanceTestAgainstAFailingEndpointFailsAndCountsWhy() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        let endpoint = try RealtimeEndpoint(verifier: apple.verifier, status: 500)
        defer { Task { await endpoint.server.shutdown() } }
        let original = try await subscriber(apple, requests: 6, concurrency: 3)
        let client = apple.client()
        try await client.configureRealtimeURL(endpoint.url)
        let started = try await client.initiatePerformanceTest(originalTransactionId: original)
        let result = try await finished(client, try #require(started.requestId))
        #expect(result.result == .fail)
        #expect(result.successRate == 0)
        #expect(result.failures == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE": 6])
        #expect(await apple.simulator.retentionMessaging.passedPerformanceTest == false)
        #expect(await appleCode { _ = try await client.performanceTestResult(requestId: UUID().uuidString) } == .performanceTestRunNotFound)
        #expect(await appleCode { _ = try await client.performanceTestResult(requestId: "not-a-uuid") } == .invalidRequestId)
    }

    @Test func throttledCallsAreRetriedAndAWrongKeyIsRefused() async throws {
        let apple = try FakeAppleOnLoopback()
        defer { Task { await apple.server.shutdown() } }
        await apple.simulator.throttleServerAPI(requests: 2, retryAfterSeconds: 1)
        let sleeper = RecordingSleeper()
        #expect(try await apple.client(sleeper: sleeper).messageList().isEmpty)
        #expect(sleeper.recorded == [1000, 1000])
        let refused = await apiError { _ = try await apple.client(key: try P256PrivateKey()).imageList() }
        #expect(refused == .unauthorized(bundleId: bundleId, keyId: "ABC123DEFG"))
    }
}

/// What goes on the wire, against a scripted transport: Apple's methods, paths, hosts and bodies.
@Suite struct RetentionMessagingWireTests {
    @Test func requestsUseApplesPathsHostsAndBodies() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([
            json(200, ""), json(200, ""), json(200, #"{"messageIdentifier":"m-1"}"#),
            json(200, #"{"config":{"maxConcurrentRequests":10,"totalRequests":100,"totalDuration":60000,"responseTimeThreshold":500,"successRateThreshold":95},"requestId":"r-1"}"#),
            json(200, #"{"result":"PENDING","numPending":40}"#),
        ])
        let client = fixture.client(transport)
        try await client.uploadImage(imageIdentifier: "img-1", png: pngHeader(width: 96, height: 96), imageSize: .bulletPoint)
        try await client.configureDefaultMessage(productId: "pro.monthly", locale: "en-US", messageIdentifier: "m-1")
        #expect(try await client.defaultMessage(productId: "pro.monthly", locale: "en-US") == "m-1")
        #expect(try await client.initiatePerformanceTest(originalTransactionId: "1000").requestId == "r-1")
        let pending = try await client.performanceTestResult(requestId: "r-1")
        #expect(pending.result == .pending && pending.numPending == 40)
        let sent = transport.sent
        #expect(sent.map(\.method) == ["PUT", "PUT", "GET", "POST", "GET"])
        #expect(sent.map(\.url.absoluteString) == [
            "https://api.storekit.apple.com/inApps/v1/messaging/image/img-1?imageSize=BULLET_POINT",
            "https://api.storekit.apple.com/inApps/v1/messaging/default/pro.monthly/en-US",
            "https://api.storekit.apple.com/inApps/v1/messaging/default/pro.monthly/en-US",
            // The performance test runs in Sandbox whatever the client's environment.
            "https://api.storekit-sandbox.apple.com/inApps/v1/messaging/performanceTest",
            "https://api.storekit-sandbox.apple.com/inApps/v1/messaging/performanceTest/result/r-1",
        ])
        #expect(sent[0].headers["Content-Type"] == "image/png")
        #expect(sent[0].body == pngHeader(width: 96, height: 96))
        #expect(sent[1].headers["Content-Type"] == "application/json")
        #expect(try JSONDecoder().decode(DefaultConfigurationRequest.self, from: Data(sent[1].body ?? [])).messageIdentifier == "m-1")
        #expect(try JSONDecoder().decode(PerformanceTestRequest.self, from: Data(sent[3].body ?? [])).originalTransactionId == "1000")
        #expect(sent.allSatisfy { $0.headers["Authorization"]?.hasPrefix("Bearer ") == true })
    }

    @Test func aServerErrorIsRetriedAndApplesErrorIsDecoded() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([
            json(500, #"{"errorCode":5000001,"errorMessage":"try again"}"#), json(200, #"{"realtimeURL":"https://x.example/r"}"#),
            json(403, #"{"errorCode":4030026,"errorMessage":"no passing test"}"#),
        ])
        let sleeper = RecordingSleeper()
        let client = fixture.client(transport, sleeper: sleeper)
        #expect(try await client.realtimeURL() == "https://x.example/r")
        #expect(sleeper.recorded.count == 1)
        let error = await apiError { try await client.configureRealtimeURL("https://x.example/r") }
        #expect(error == .apple(status: 403, code: .forbiddenNoPassingTest, message: "no passing test"))
        #expect(transport.sent.count == 3)
    }

    @Test func legacyHostsAreUsedWhenConfigured() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([json(200, #"{"messageIdentifiers":[]}"#)])
        _ = try await fixture.client(transport, settings: .init(environment: .sandbox, hosts: .legacy)).messageList()
        #expect(transport.sent.first?.url.absoluteString == "https://api.storekit-sandbox.itunes.apple.com/inApps/v1/messaging/message/list")
    }

    @Test func anOversizedImageIsRefusedBeforeSending() async throws {
        let fixture = try Fixture()
        let transport = ScriptedTransport([])
        let client = fixture.client(transport)
        let error = await apiError { try await client.uploadImage(imageIdentifier: "i", png: [UInt8](repeating: 0, count: ImageSize.maxUploadBytes + 1)) }
        #expect(error?.code == "APPLE_INVALID_REQUEST")
        #expect(transport.sent.isEmpty)
    }
}
