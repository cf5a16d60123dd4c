import AppStore
import Foundation
import HTTPServer
import Storage

/// Ingests V2 `signedPayload`s exactly as `POST /v1/apple/notifications` does — same verifier,
/// mapper and ledger — for notifications that arrive another way (reconciliation reads them
/// from Apple's notification history). A repeated `notificationUUID` is a duplicate, whichever
/// way it came first.
public struct NotificationIngest: Sendable {
    let api: API

    /// Why a payload was not stored.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Refused (verification, app, environment, mapping) with the problem code; recorded as rejected.
        case rejected(code: String, message: String)
        /// Storage could not take it; nothing was stored, try again later.
        case storage(String)

        public var description: String {
            switch self {
            case .rejected(let code, let message): "\(code): \(message)"
            case .storage(let message): "storage: \(message)"
            }
        }
    }

    /// Verifies and stores `signedPayload` from `source`; a refusal is recorded (bounded) as the
    /// endpoint records it.
    public func ingest(signedPayload: String, source: IngestSource) async throws(Failure) -> IngestResult.Status {
        let now = api.clock.nowMilliseconds()
        let rejection: Rejection
        do {
            return try await api.ingestNotification(signedPayload: signedPayload, source: source, now: now)
        } catch let error as VerificationError {
            rejection = Rejection(error)
        } catch let error as Rejection {
            rejection = error
        } catch let error as HTTPError {
            throw .storage(error.detail ?? "\(error.status)")
        } catch {
            throw .storage("\(error)")
        }
        if rejection.code == .retryableVerificationFailure { throw .storage(rejection.message) }
        let body = API.storedBody("signedPayload", signedPayload)
        try? await api.ledger.recordRejected(
            ReceivedMessage(notificationUUID: nil, source: source, body: body, receivedAt: now), code: rejection.code.rawValue)
        throw .rejected(code: rejection.code.rawValue, message: rejection.message)
    }
}
