import AppStore
import AppStoreTesting
import Foundation
import Testing

/// Apple's Retention Messaging API response fixtures decode into the models, names and states exact.
@Suite("Apple fixture compatibility: Retention Messaging API")
struct RetentionMessagingFixtureTests {
    static let id = "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"

    @Test(.enabled(if: AppleTestData.suitesRun)) func messageAndImageLists() throws {
        let messages = try AppleFixtures.decodeModel(GetMessageListResponse.self, "getMessageListResponse", swift: true)
        #expect(messages.messageIdentifiers == [GetMessageListResponseItem(messageIdentifier: Self.id, messageState: .approved)])
        let images = try AppleFixtures.decodeModel(GetImageListResponse.self, "getImageListResponse", swift: true)
        #expect(images.imageIdentifiers == [GetImageListResponseItem(imageIdentifier: Self.id, imageState: .approved, imageSize: .fullSize)])
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func defaultMessageAndRealtimeURL() throws {
        #expect(try AppleFixtures.decodeModel(DefaultConfigurationResponse.self, "getDefaultMessageResponse", swift: true).messageIdentifier == Self.id)
        #expect(try AppleFixtures.decodeModel(RealtimeUrlResponse.self, "getRealtimeUrlResponse", swift: true).realtimeURL == "https://example.com/realtime")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func performanceTest() throws {
        let config = PerformanceTestConfig(
            maxConcurrentRequests: 10, totalRequests: 100, totalDuration: 60000, responseTimeThreshold: 500, successRateThreshold: 95)
        let started = try AppleFixtures.decodeModel(PerformanceTestResponse.self, "performanceTestResponse", swift: true)
        #expect(started == PerformanceTestResponse(config: config, requestId: "c4b87a1d-2e3f-4a5b-9c6d-7e8f9a0b1c2d"))
        let result = try AppleFixtures.decodeModel(PerformanceTestResultResponse.self, "performanceTestResultResponse", swift: true)
        #expect(result == PerformanceTestResultResponse(
            config: config, target: "https://example.com/retention", result: .pass, successRate: 98, numPending: 0,
            responseTimes: PerformanceTestResponseTimes(average: 120, p50: 100, p90: 200, p95: 250, p99: 400),
            failures: ["TIMED_OUT": 1, "NO_RESPONSE": 1]))
        #expect(result.failures?.keys.allSatisfy { SendAttemptResult(rawValue: $0).isKnown } == true)
    }

    @Test func anUnknownStateDecodesAndKeepsItsText() throws {
        let item = try AppStoreJSON.decode(GetMessageListResponseItem.self, from: Data(#"{"messageState":"IN_REVIEW"}"#.utf8))
        #expect(item.messageState?.rawValue == "IN_REVIEW")
        #expect(item.messageState?.isKnown == false)
    }
}
