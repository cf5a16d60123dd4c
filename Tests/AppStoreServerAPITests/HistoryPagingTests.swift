import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Testing

/// A history that pages forever or mixes a forged item into a page: the walk stops at once, and the
/// page keeps what verifies.
@Suite struct HistoryPagingTests {
    @Test func aRepeatedRevisionEndsTheWalkAtOnce() async throws {
        let fixture = try Fixture()
        let page = #"{"signedTransactions":["\#(try fixture.transaction("1"))"],"revision":"r1","hasMore":true}"#
        let transport = ScriptedTransport(Array(repeating: json(200, page), count: 5))
        let error = await apiError { _ = try await fixture.client(transport).transactionHistoryAllPages("1") }
        #expect(error?.code == "APPLE_INVALID_RESPONSE")
        #expect(error?.description.contains("endless pagination: a page token repeated after 2 pages") == true, "\(String(describing: error))")
        #expect(transport.sent.count == 2)
    }

    @Test func aTrailStopsAtItsPageCapAndAtTheEnd() throws {
        var trail = PageTrail(maxPages: 3)
        #expect(try trail.next(hasMore: true, token: "a") == "a")
        #expect(try trail.next(hasMore: true, token: "b") == "b")
        #expect(throws: ServerAPIError.invalidResponse(message: "endless pagination: more than 3 pages")) {
            try trail.next(hasMore: true, token: "c")
        }
        var done = PageTrail(maxPages: 3)
        #expect(try done.next(hasMore: false, token: "a") == nil)
        #expect(try done.next(hasMore: true, token: nil) == nil)
        var huge = PageTrail(maxPages: 3)
        #expect(throws: ServerAPIError.self) { try huge.next(hasMore: true, token: String(repeating: "x", count: 2000)) }
    }

    @Test func aForgedItemIsSetAsideAndTheRestOfThePageKept() async throws {
        let fixture = try Fixture()
        let stranger = try SimulatorCA.ephemeral()
        let genuine = try fixture.ca.signer.sign(
            ResponseBodyV2DecodedPayload(
                notificationType: .test, notificationUUID: "genuine", data: NotificationData(environment: .production, bundleId: bundleId),
                signedDate: start))
        let forged = try stranger.signer.sign(
            ResponseBodyV2DecodedPayload(
                notificationType: .test, notificationUUID: "forged", data: NotificationData(environment: .production, bundleId: bundleId),
                signedDate: start))
        let body = #"{"notificationHistory":[{"signedPayload":"\#(forged)"},{"signedPayload":"\#(genuine)"},{}],"hasMore":false}"#
        let page = try await fixture.client(ScriptedTransport([json(200, body)]))
            .notificationHistory(NotificationHistoryRequest(startDate: 0, endDate: 1))
        #expect(page.notifications.map(\.notification.payload.notificationUUID) == ["genuine"])
        #expect(page.unverified.map(\.signedPayload) == [forged, ""])
        #expect(page.unverified.map(\.error.code) == ["APPLE_PAYLOAD_UNVERIFIED", "APPLE_INVALID_RESPONSE"])
    }
}
