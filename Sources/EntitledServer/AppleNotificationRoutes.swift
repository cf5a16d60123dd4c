import AppStore
import Foundation
import HTTPServer
import JSONCoding
import Storage

/// Apple's App Store Server Notifications: V2 signed payloads and legacy V1 bodies. No key: the
/// signature or the shared secret is the proof.
struct AppleNotificationRoutes: Sendable {
    let ingest: Ingest
    let refusals: Refusals
    let budget: RejectionBudget
    let clock: any EpochClock
    let codec: JSONCodec
    let metrics: ServerMetrics

    func register(on router: inout Router) {
        let routes = self
        router.post("/v1/apple/notifications") { try await routes.notificationV2($0) }
        router.post("/v1/apple/notifications/v1") { try await routes.notificationV1($0) }
    }

    /// `POST /v1/apple/notifications`: V2 `{"signedPayload": "…"}`.
    func notificationV2(_ request: Request) async throws -> Response {
        let now = clock.nowMilliseconds()
        try Self.checkBody(request)
        // Verification is the expensive part: refused at once only after this address's own
        // notification failures, never for its bad keys or anyone's V1 failures.
        guard budget.allows(request.remoteAddress, .appleSignature) else { throw RejectionBudget.exhausted }
        guard let envelope = try? codec.decode(ResponseBodyV2.self, from: request.body) else {
            throw await refusals.reject(
                Rejection(.invalidJSON, "the body is not {\"signedPayload\": \"…\"}"), .appleSignature, source: .appleV2,
                request: request, now: now)
        }
        do throws(IngestError) {
            let ingested = try await ingest.notification(signedPayload: envelope.signedPayload, source: .appleV2, now: now)
            noteIngested(request, ingested)
            return .acknowledgment(ingested.status)
        } catch {
            throw await refusals.answer(error, .appleSignature, source: .appleV2, request: request, now: now)
        }
    }

    /// `POST /v1/apple/notifications/v1`: the legacy JSON body; `password` must equal the app's shared secret.
    func notificationV1(_ request: Request) async throws -> Response {
        let now = clock.nowMilliseconds()
        try Self.checkBody(request)
        let body: ResponseBodyV1
        do {
            body = try AppStoreJSON.decode(ResponseBodyV1.self, from: Data(request.body), codec: codec)
        } catch {
            throw HTTPError(.invalidJSON, "the body is not a V1 notification: \(error.description)")
        }
        do throws(IngestError) {
            let ingested = try await ingest.notificationV1(body, now: now)
            noteIngested(request, ingested)
            return .acknowledgment(ingested.status)
        } catch {
            throw await refusals.answer(error, .sharedSecret, source: .appleV1, request: request, now: now, body: ingest.redacted(body))
        }
    }

    /// Size and nesting checks of Apple's bodies.
    static func checkBody(_ request: Request) throws {
        guard request.body.count <= API.maxNotificationBytes else {
            throw HTTPError.payloadTooLarge(limit: API.maxNotificationBytes)
        }
        try RequestInput.checkDepth(request.body)
    }

    /// Observes an ingested notification's projection lag (an applied one with a `signedDate`)
    /// and logs it with the request id: identifiers only, never the payload. (``Ingest`` counts it.)
    func noteIngested(_ request: Request, _ ingested: IngestedNotification) {
        let message = ingested.message
        let version = message.source == .appleV1 ? "1" : "2"
        let (uuid, type, subtype) = (message.notificationUUID, message.notificationType, message.subtype)
        if ingested.status == .accepted, let signedDate = ingested.signedDate {
            metrics.projectionLag.observe([], Double(clock.nowMilliseconds() - signedDate) / 1000)
        }
        ServerLog.request(
            .info, "notification \(ingested.status.rawValue)", requestId: request.requestId,
            ["version": version, "notificationUUID": uuid ?? "", "type": type ?? "", "subtype": subtype ?? "", "bundleId": ingested.bundleId])
    }
}
