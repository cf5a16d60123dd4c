import AppStore
import HTTPServer
import Storage

/// The HTTP side of a refused ingest: the sender's rejection budget, the log line and metric, the
/// record (through ``Ingest``), and the problem answered.
struct Refusals: Sendable {
    let ingest: Ingest
    let budget: RejectionBudget
    let metrics: ServerMetrics

    /// An ingest failure's answer: a refusal through ``reject(_:_:source:request:now:body:)``, a
    /// storage failure as ``Problems/storage(_:invalidRequest:)`` says.
    func answer(
        _ error: IngestError, _ credential: RejectionBudget.Credential, source: IngestSource, request: Request, now: Int64,
        body: [UInt8]? = nil
    ) async -> HTTPError {
        switch error {
        case .rejected(let rejection): await reject(rejection, credential, source: source, request: request, now: now, body: body)
        case .storage(let failure): Problems.storage(failure)
        }
    }

    /// Records the rejection from `source` (best effort), charges the sender's `credential` budget,
    /// and returns the answer: 503 for retryable failures (nothing recorded, nothing charged), 429
    /// when that budget was already spent (nothing recorded), else 4xx with the code. `body` is
    /// what may be kept of the request (the request's body when nil).
    func reject(
        _ error: Rejection, _ credential: RejectionBudget.Credential, source: IngestSource, request: Request,
        now: Int64, body: [UInt8]? = nil
    ) async -> HTTPError {
        if error.isRetryable { return Problems.retryableVerification }
        noteRejected(request, source: source, code: error.code.rawValue)
        guard budget.charge(request.remoteAddress, credential) else { return RejectionBudget.exhausted }
        await ingest.recordRejected(error, source: source, body: body ?? request.body, now: now)
        return Problems.rejected(error)
    }

    /// Counts a rejected notification (not a posted transaction) and logs any rejection: the code
    /// and the path only; the body (a signed payload, a shared secret) is never logged.
    func noteRejected(_ request: Request, source: IngestSource, code: String) {
        if source != .client { metrics.notificationRejected(version: source == .appleV2 ? "2" : source == .googlePlay ? "google-play" : "1", code: code) }
        ServerLog.request(
            .warn, "rejected", requestId: request.requestId, ["code": code, "path": request.path, "remote": request.remoteAddress])
    }
}
