import AppStore
import Entitlements
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
        let body = API.storedBody("signedPayload", signedPayload, codec: api.codec)
        try? await api.ledger.recordRejected(
            ReceivedMessage(notificationUUID: nil, source: source, body: body, receivedAt: now), code: rejection.code.rawValue)
        api.metrics.notificationRejected(version: "2", code: rejection.code.rawValue)
        throw .rejected(code: rejection.code.rawValue, message: rejection.message)
    }
}

extension API {
    /// Verifies, maps and stores one V2 `signedPayload`: the V2 endpoint's work once the HTTP
    /// checks passed (`request` set: counted and logged as ``noteIngested(_:_:signedDate:bundleId:status:)``
    /// does), and reconciliation's for each notification of Apple's history (counted only).
    /// - Throws: ``VerificationError`` or ``Rejection`` (nothing stored), or the storage ``HTTPError``.
    func ingestNotification(
        signedPayload: String?, source: IngestSource, now: Int64, request: Request? = nil
    ) async throws -> IngestResult.Status {
        guard let signedPayload, !signedPayload.isEmpty else {
            throw VerificationError.malformed("signedPayload is missing")
        }
        guard let claimed = JWSPeek.notificationBundleId(signedPayload, codec: codec) else {
            throw VerificationError.malformed("signedPayload is not a JWS")
        }
        let app = try self.app(claimed)
        let verified = try await verifier.verifyNotification(signedPayload: signedPayload, app: app)
        let payload = verified.payload
        try checkEnvironment(payload.verificationEnvironment, app: app)
        let facts: [Fact]
        do {
            facts = try app.facts(from: payload)
        } catch {
            throw Self.rejection(error)
        }
        let message = ReceivedMessage(
            notificationUUID: payload.notificationUUID, source: source,
            body: Self.storedBody("signedPayload", signedPayload, codec: codec, bare: verified.isBare), receivedAt: now,
            notificationType: payload.notificationType?.rawValue ?? "", subtype: payload.subtype?.rawValue,
            bundleId: app.bundleId)
        // Each fact with the JWS it was verified from and what the verifier did not know in it.
        let signed = facts.map { fact -> (fact: Fact, signed: String?, unknown: [UnknownMember]) in
            switch fact {
            case .notification: (fact, signedPayload, verified.unknownMembers)
            case .transaction: (fact, payload.data?.signedTransactionInfo, verified.transactionUnknownMembers)
            case .renewalInfo: (fact, payload.data?.signedRenewalInfo, verified.renewalUnknownMembers)
            case .appTransaction: (fact, payload.appData?.signedAppTransactionInfo, [])
            case .receiptEntry, .pendingRenewal, .v1Notification, .consumableSpend, .promotionalGrant, .promotionalGrantEnd:
                (fact, nil, [])
            }
        }
        if let transaction = payload.data?.transactionInfo {
            try await enqueueBackfillIfUnseen(
                app: app, transaction.originalTransactionId, environment: Environment(transaction.environment),
                source: source, now: now)
        }
        try await enqueueConsumptionRequest(app: app, payload, transactionId: payload.data?.transactionInfo?.transactionId, now: now)
        let status = try await ingestRecordingUnknown(message, facts: signed)
        for case .transaction(let transaction) in facts {
            try await enqueueFinish(
                app: app, transactionId: transaction.transactionId, environment: transaction.environment, source: source, now: now)
        }
        if let request {
            noteIngested(request, message, signedDate: payload.signedDate, bundleId: app.bundleId, status: status)
        } else {
            metrics.notificationIngested(version: "2", type: message.notificationType, subtype: message.subtype, status: status)
        }
        return status
    }
}

extension API {
    /// Stores verified facts (``FactLedger/ingest(_:facts:claim:)``) with the members of their
    /// signed texts this build does not know (as the verifier found them) recorded on them
    /// (``UnknownFields``); counts those members when the delivery was new.
    func ingestRecordingUnknown(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?, unknown: [UnknownMember])], claim: Claim? = nil
    ) async throws(HTTPError) -> IngestResult.Status {
        let (annotated, seen) = UnknownFields.annotate(facts)
        let status = try await store { () async throws(StorageError) in
            try await ledger.ingest(message, facts: annotated, claim: claim)
        }
        if status == .accepted { metrics.unknownFieldsSeen(seen) }
        return status
    }
}
