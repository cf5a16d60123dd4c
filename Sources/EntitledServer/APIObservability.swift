import EntitledConfig
import HTTPServer
import Storage

/// What the API tells operators: `GET /metrics`, and the metrics and log line of each notification.
extension API {
    /// `GET /metrics`: an API key with the `metrics` scope.
    func metricsPage(_ request: Request) throws -> Response {
        let principal = try authenticate(request)
        try authenticator.authorize(principal, scope: .metrics, appUserId: nil)
        return metrics.response()
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

    /// Counts a rejected notification (not a posted transaction) and logs any rejection: the code
    /// and the path only; the body (a signed payload, a shared secret) is never logged.
    func noteRejected(_ request: Request, source: IngestSource, code: String) {
        if source != .client { metrics.notificationRejected(version: source == .appleV2 ? "2" : "1", code: code) }
        ServerLog.request(
            .warn, "rejected", requestId: request.requestId, ["code": code, "path": request.path, "remote": request.remoteAddress])
    }
}
