import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import JSONCoding
import Storage

/// Why an ingest stored nothing.
enum IngestError: Error, Sendable, CustomStringConvertible {
    /// Refused (verification, app, environment, mapping) with its problem code. The caller records
    /// it as rejected (``Ingest/recordRejected(_:source:body:now:)``) unless it is retryable.
    case rejected(Rejection)
    /// Storage could not take it, or could not keep its follow-up job: nothing was stored.
    case storage(StorageError)

    var description: String {
        switch self {
        case .rejected(let rejection): "\(rejection.code.rawValue): \(rejection.message)"
        case .storage(let error): error.description
        }
    }
}

/// What an accepted or duplicate notification was, for the caller's log line and metrics.
struct IngestedNotification: Sendable {
    var status: IngestResult.Status
    var message: ReceivedMessage
    /// The notification's `signedDate` (V2 only).
    var signedDate: Int64?
    var bundleId: String
}

/// Everything that turns Apple's signed data into stored facts, whichever way it came (Apple's
/// notifications, a posted transaction or receipt, reconciliation, backfill, import): choosing the
/// configured app, verifying, mapping to facts, enqueueing the follow-up jobs (backfill, finish,
/// consumption answer), committing through the ledger, and recording refusals as rejected.
///
/// It knows nothing of HTTP: callers pass the ``IngestSource`` and get an ``IngestError``; the HTTP
/// layer maps that to a problem in one place (``Problems``).
public struct Ingest: Sendable {
    let configuration: Configuration
    let verifier: any NotificationVerifying
    let ledger: FactLedger
    let clock: any EpochClock
    /// Reads the JWS headers peeked before verification and writes the stored bodies.
    let codec: JSONCodec
    let metrics: ServerMetrics
    /// The App Store Server API client of each app with `serverAPI`, by bundleId.
    let serverAPI: [String: AppStoreServerAPIClient]
    /// Durable jobs (backfills, finishes, consumption answers).
    var jobs: any DurableJobStore { ledger.store }

    init(
        configuration: Configuration, verifier: any NotificationVerifying, ledger: FactLedger, clock: any EpochClock,
        codec: JSONCodec, metrics: ServerMetrics, serverAPI: [String: AppStoreServerAPIClient] = [:]
    ) {
        self.configuration = configuration
        self.verifier = verifier
        self.ledger = ledger
        self.clock = clock
        self.codec = codec
        self.metrics = metrics
        self.serverAPI = serverAPI
    }

    // MARK: - Notifications

    /// Verifies, maps and stores one V2 `signedPayload` from `source`, with its follow-up jobs.
    func notification(signedPayload: String?, source: IngestSource, now: Int64) async throws(IngestError) -> IngestedNotification {
        try await Self.typed { () async throws -> IngestedNotification in
            try await verifiedNotification(signedPayload: signedPayload, source: source, now: now)
        }
    }

    /// ``notification(signedPayload:source:now:)`` for callers without a request of their own
    /// (reconciliation): a refusal is recorded as rejected and counted here.
    func notificationRecordingRejection(signedPayload: String, source: IngestSource) async throws(IngestError) -> IngestResult.Status {
        let now = clock.nowMilliseconds()
        do {
            return try await notification(signedPayload: signedPayload, source: source, now: now).status
        } catch {
            if case .rejected(let rejection) = error, !rejection.isRetryable {
                await recordRejected(rejection, source: source, body: Self.storedBody("signedPayload", signedPayload, codec: codec), now: now)
                metrics.notificationRejected(version: "2", code: rejection.code.rawValue)
            }
            throw error
        }
    }

    private func verifiedNotification(signedPayload: String?, source: IngestSource, now: Int64) async throws -> IngestedNotification {
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
            case .receiptEntry, .pendingRenewal, .v1Notification, .consumableSpend, .promotionalGrant, .promotionalGrantEnd,
                .playSubscription, .playProduct, .playVoided, .playOrder:
                (fact, nil, [])
            }
        }
        if let transaction = payload.data?.transactionInfo {
            try await enqueueBackfillIfUnseen(
                app: app, transaction.originalTransactionId, environment: Environment(transaction.environment),
                source: source, now: now)
        }
        try await enqueueConsumptionRequest(app: app, payload, transactionId: payload.data?.transactionInfo?.transactionId, now: now)
        let status = try await commitRecordingUnknown(message, facts: signed)
        for case .transaction(let transaction) in facts {
            try await enqueueFinish(
                app: app, transactionId: transaction.transactionId, environment: transaction.environment, source: source, now: now)
        }
        metrics.notificationIngested(version: "2", type: message.notificationType, subtype: message.subtype, status: status)
        return IngestedNotification(status: status, message: message, signedDate: payload.signedDate, bundleId: app.bundleId)
    }

    /// Checks a legacy V1 notification's `password` against its app's shared secret, maps and
    /// stores it (source `appleV1`). A refusal's body to record is ``redacted(_:)``.
    func notificationV1(_ body: ResponseBodyV1, now: Int64) async throws(IngestError) -> IngestedNotification {
        let app = body.bid.flatMap { configuration.app(bundleId: $0) }
        // Compare even when the app or its secret is unknown, so timing does not tell which it was.
        let expected = app?.sharedSecret ?? "\u{0}no shared secret configured"
        let matches = constantTimeSecretEquals(body.password ?? "", expected)
        guard let app, app.sharedSecret != nil, matches else {
            throw .rejected(Rejection(.invalidSharedSecret, "password does not match the app's shared secret"))
        }
        let raw = redacted(body)
        let facts = try await Self.typed { try app.facts(fromV1: body) }
        let environment = Environment(
            body.environment?.appStoreEnvironment ?? body.unifiedReceipt?.environment?.appStoreEnvironment)
        try await Self.typed { try checkEnvironment(AppStoreEnvironment(rawValue: environment.rawValue), app: app) }
        // V1 has no id: the body's digest (without the password) stands in for one.
        let message = ReceivedMessage(
            notificationUUID: "v1:" + Hex.encode(Digests.hash(raw)), source: .appleV1, body: raw, receivedAt: now,
            notificationType: body.notificationType?.rawValue ?? "", bundleId: app.bundleId)
        // V1 facts have no signed form: their identity keys them.
        let status = try await Self.typed { try await ledger.ingest(message, facts: facts.map { ($0, nil) }) }
        metrics.notificationIngested(version: "1", type: message.notificationType, subtype: message.subtype, status: status)
        return IngestedNotification(status: status, message: message, signedDate: nil, bundleId: app.bundleId)
    }

    /// The V1 body without its password, for the ledger (secrets are never stored or logged).
    func redacted(_ body: ResponseBodyV1) -> [UInt8] {
        var copy = body
        copy.password = nil
        return (try? AppStoreJSON.encode(copy)).map(Array.init) ?? []
    }

    // MARK: - Signed data the app posts

    /// Signed data an app posts for its customer.
    enum PostedSignedData: Sendable {
        /// StoreKit 2's `Transaction.jwsRepresentation`.
        case transaction(String)
        /// `AppTransaction.shared`'s `jwsRepresentation`.
        case appTransaction(String)
    }

    /// Verifies and stores what the app posted for `appUserId` (source `client`): a transaction is
    /// linked to the customer as its app's restore behaviour says; an app transaction becomes the
    /// customer's through their token.
    func posted(_ posted: PostedSignedData, appUserId: String, now: Int64) async throws(IngestError) {
        try await Self.typed { () async throws in
            let verified: Fact
            let app: App
            let claim: Claim
            let signed: String
            let member: String
            var unknown: [UnknownMember] = []
            switch posted {
            case .transaction(let jws):
                let checked = try await verifiedTransaction(jws)
                app = checked.app
                try await enqueueBackfillIfUnseen(
                    app: app, checked.fact.originalTransactionId, environment: checked.fact.environment, source: .client, now: now)
                verified = .transaction(checked.fact)
                unknown = checked.unknown
                signed = jws
                member = "signedTransaction"
                claim = Claim(appUserId: appUserId, behaviour: app.restoreBehavior)
            case .appTransaction(let jws):
                guard let peeked = JWSPeek.payload(AppTransaction.self, jws, codec: codec) else {
                    throw VerificationError.malformed("signedAppTransaction is not a JWS")
                }
                app = try self.app(peeked.bundleId)
                let appTransaction = try await verifier.verifyAppTransaction(signedAppTransaction: jws, app: app)
                try checkEnvironment(appTransaction.receiptType, app: app)
                let fact: AppTransactionFact
                do throws(MappingError) { fact = try app.appTransaction(appTransaction) } catch {
                    throw Self.rejection(error)
                }
                verified = .appTransaction(fact)
                signed = jws
                member = "signedAppTransaction"
                // No subscription to link: the app transaction is the customer's through their token.
                claim = Claim(appUserId: appUserId, behaviour: .keep)
            }
            let message = ReceivedMessage(
                notificationUUID: nil, source: .client, body: Self.storedBody(member, signed, codec: codec), receivedAt: now,
                bundleId: app.bundleId)
            _ = try await commitRecordingUnknown(message, facts: [(verified, signed, unknown)], claim: claim)
            if case .transaction(let fact) = verified {
                try await enqueueFinish(app: app, transactionId: fact.transactionId, environment: fact.environment, source: .client, now: now)
            }
        }
    }

    // MARK: - Shared steps

    /// The configured app of a payload's `bundleId`.
    func app(_ bundleId: String?) throws(VerificationError) -> App {
        guard let bundleId, let app = configuration.app(bundleId: bundleId) else {
            throw VerificationError(.invalidAppIdentifier, "the payload's bundleId is not a configured app")
        }
        return app
    }

    func checkEnvironment(_ environment: AppStoreEnvironment?, app: App) throws(VerificationError) {
        let name = environment?.rawValue ?? "Production"
        guard app.environments.contains(name) else {
            throw VerificationError(.invalidEnvironment, "environment \(name) is not accepted for this app")
        }
    }

    /// A payload that verified but does not map to facts: `INVALID_DATE` for a date outside
    /// ``Fact/acceptedDates``, else `MALFORMED_PAYLOAD`. Either is recorded as rejected.
    static func rejection(_ error: MappingError) -> Rejection {
        switch error.reason {
        case .missing: Rejection(.malformedPayload, error.description)
        case .dateOutOfRange: Rejection(.invalidDate, error.description)
        }
    }

    /// Stores verified facts (``FactLedger/ingest(_:facts:claim:)``) with the members of their
    /// signed texts this build does not know (as the verifier found them) recorded on them
    /// (``UnknownFields``); counts those members when the delivery was new.
    func commitRecordingUnknown(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?, unknown: [UnknownMember])], claim: Claim? = nil
    ) async throws(IngestError) -> IngestResult.Status {
        let (annotated, seen) = UnknownFields.annotate(facts)
        let status: IngestResult.Status
        do {
            status = try await ledger.ingest(message, facts: annotated, claim: claim)
        } catch {
            throw .storage(error)
        }
        if status == .accepted { metrics.unknownFieldsSeen(seen) }
        return status
    }

    /// Creates a follow-up job (once per `key`) for ``jobRunner`` to run; a job that cannot be stored
    /// fails the ingest, so the sender retries and nothing is lost.
    func enqueue(kind: String, key: String, app: App, subject: String, now: Int64, unlessFactsOf: String?) async throws(IngestError) {
        do {
            _ = try await jobs.enqueueJob(kind: kind, key: key, bundleId: app.bundleId, subject: subject, now: now, unlessFactsOf: unlessFactsOf)
        } catch {
            throw .storage(StorageError(.unavailable, "the follow-up job could not be stored", detail: "\(error)"))
        }
    }

    /// Records a refused message as rejected (best effort: the refusal stands even when this fails),
    /// under the `source` the caller names; `body` is what may be kept of it (never a secret).
    func recordRejected(_ rejection: Rejection, source: IngestSource, body: [UInt8], now: Int64) async {
        try? await ledger.recordRejected(
            ReceivedMessage(notificationUUID: nil, source: source, body: body, receivedAt: now), code: rejection.code.rawValue)
    }

    /// An accepted signed message's body as the ledger keeps it: only the member that was
    /// verified, so that unknown keys posted beside it (padding) are not stored. Written by the
    /// codec's writer (`JSONEncoder`'s bytes; with the fast paths without its string detour, and
    /// around a JWS its verification found `bare` as it is: ``JSONCodec/encodeMember(_:_:plain:)``).
    static func storedBody(_ key: String, _ jws: String, codec: JSONCodec, bare: Bool = false) -> [UInt8] {
        (try? codec.encodeMember(key, jws, plain: bare)) ?? []
    }

    /// Runs a step that throws the verifier's, the mapper's or the ledger's errors: the one place
    /// they become an ``IngestError``.
    static func typed<T>(_ body: () async throws -> T) async throws(IngestError) -> T {
        do {
            return try await body()
        } catch let error as IngestError {
            throw error
        } catch let error as VerificationError {
            throw .rejected(Rejection(error))
        } catch let error as Rejection {
            throw .rejected(error)
        } catch let error as MappingError {
            throw .rejected(rejection(error))
        } catch let error as StorageError {
            throw .storage(error)
        } catch {
            throw .storage(StorageError(.internal, "ingest failed", detail: "\(error)"))
        }
    }
}
