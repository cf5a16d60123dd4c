import AppStore
import AppStoreServerAPI
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// Signed transactions that arrive without a notification — posted by the app, or fetched from
/// Apple's transaction history by a backfill — and the backfill job a subscription seen for the
/// first time gets.
extension API {
    /// The job kind that fetches a subscription's whole history from Apple (``Backfill``).
    static let backfillJobKind = "backfill"

    /// Verifies a signed transaction with its app's verifier and maps it to a fact, with the
    /// members of its JSON this build does not know.
    /// - Throws: ``VerificationError`` or ``Rejection``.
    func verifiedTransaction(_ jws: String) async throws -> (app: App, fact: TransactionFact, unknown: [UnknownMember]) {
        guard let peeked = JWSPeek.payload(JWSTransactionDecodedPayload.self, jws, codec: codec) else {
            throw VerificationError.malformed("signedTransaction is not a JWS")
        }
        let app = try self.app(peeked.bundleId)
        let (transaction, unknown) = try await verifier.verifyTransaction(signedTransaction: jws, app: app)
        try checkEnvironment(transaction.environment, app: app)
        do {
            return (app, try app.transaction(transaction), unknown)
        } catch {
            throw Self.rejection(error)
        }
    }

    /// Verifies and stores one signed transaction from `source`, linked to `claim`'s customer when
    /// given (else through its appAccountToken or the subscription's existing link).
    /// - Throws: ``VerificationError`` or ``Rejection`` (nothing stored), or the storage ``HTTPError``.
    func ingestTransaction(_ jws: String, source: IngestSource, claim: Claim?, now: Int64) async throws -> TransactionFact {
        let (app, fact, unknown) = try await verifiedTransaction(jws)
        try await enqueueBackfillIfUnseen(app: app, fact.originalTransactionId, environment: fact.environment, source: source, now: now)
        let message = ReceivedMessage(
            notificationUUID: nil, source: source, body: Self.storedBody("signedTransaction", jws, codec: codec), receivedAt: now,
            bundleId: app.bundleId)
        _ = try await ingestRecordingUnknown(message, facts: [(.transaction(fact), jws, unknown)], claim: claim)
        return fact
    }

    /// Creates the backfill job of `originalTransactionId` when its app has `serverAPI` and the
    /// ledger holds nothing of it yet, before its first fact is stored: the job then exists
    /// whatever happens to the process next (a crash before the ingest commits only means a
    /// backfill of a subscription the next delivery brings again).
    func enqueueBackfillIfUnseen(
        app: App, _ originalTransactionId: String?, environment: Environment, source: IngestSource, now: Int64
    ) async throws {
        guard source != .backfill, let originalTransactionId, !originalTransactionId.isEmpty,
            serverAPI[app.bundleId] != nil, environment == .production || environment == .sandbox
        else { return }
        do {
            _ = try await jobs.enqueueJob(
                kind: Self.backfillJobKind, key: app.bundleId + " " + originalTransactionId, bundleId: app.bundleId,
                subject: originalTransactionId, now: now, unlessFactsOf: originalTransactionId)
        } catch {
            throw Self.unavailable
        }
    }
}

/// Fetches a subscription's whole transaction history and status from Apple and ingests each
/// signed transaction and renewal info (source `backfill`) through the same path as a posted
/// transaction, so the customer's answer comes from the complete history.
struct Backfill: Sendable {
    let api: API

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let client = api.serverAPI[job.bundleId], let app = api.configuration.app(bundleId: job.bundleId) else {
            throw JobFailure(retryable: false, "app \(job.bundleId) has no serverAPI any more")
        }
        let history: [Signed<JWSTransactionDecodedPayload>]
        let statuses: SubscriptionStatuses
        do {
            history = try await client.transactionHistoryAllPages(job.subject)
            statuses = try await client.subscriptionStatuses(job.subject)
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.description)")
        }
        let now = api.clock.nowMilliseconds()
        do {
            for transaction in history {
                _ = try await api.ingestTransaction(transaction.jws, source: .backfill, claim: nil, now: now)
            }
            for status in statuses.subscriptions {
                guard let renewal = status.renewalInfo, let transaction = status.transaction else { continue }
                let fact = try app.renewalInfo(renewal.payload, fallbackProductId: transaction.payload.productId)
                let message = ReceivedMessage(
                    notificationUUID: nil, source: .backfill,
                    body: API.storedBody("signedRenewalInfo", renewal.jws, codec: api.codec), receivedAt: now, bundleId: app.bundleId)
                _ = try await api.ingestRecordingUnknown(message, facts: [(.renewalInfo(fact), renewal.jws, renewal.unknownMembers)])
            }
        } catch let error as HTTPError {
            throw JobFailure(retryable: error.status >= 500, error.detail ?? "\(error.status)")
        } catch {
            // Refused by verification or mapping: trying again gives the same answer.
            throw JobFailure(retryable: false, "\(error)")
        }
    }
}
