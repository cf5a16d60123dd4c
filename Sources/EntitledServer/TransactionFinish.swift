import AppStoreServerAPI
import EntitledConfig
import Entitlements
import Storage

/// `apps[].finishTransactions`: the server calls Apple's Finish Transaction for each transaction
/// once it is stored, so an app whose entitlements come from this server need not rely on the
/// device finishing it.
extension API {
    /// The job kind that finishes a transaction at Apple (``TransactionFinisher``).
    static let finishJobKind = "finish"

    /// Creates the finish job of `transactionId` (once per transaction: the job's key) when its
    /// app asks for it. Called after the ingest commits, so only a stored transaction is finished;
    /// a crash in between is repaired by the sender's retry (Apple redelivers an unanswered
    /// notification, the app posts again), whose duplicate ingest enqueues it then.
    func enqueueFinish(app: App, transactionId: String, environment: Environment, source: IngestSource, now: Int64) async throws {
        guard app.finishTransactions, source != .backfill, !transactionId.isEmpty, serverAPI[app.bundleId] != nil,
            environment == .production || environment == .sandbox
        else { return }
        do {
            _ = try await jobs.enqueueJob(
                kind: Self.finishJobKind, key: app.bundleId + " " + transactionId, bundleId: app.bundleId, subject: transactionId,
                now: now, unlessFactsOf: nil)
        } catch {
            throw Self.unavailable
        }
    }
}

/// Calls Finish Transaction for a job's transaction; Apple's retryable answers retry the job.
struct TransactionFinisher: Sendable {
    let api: API

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let client = api.serverAPI[job.bundleId] else { throw JobFailure(retryable: false, "app \(job.bundleId) has no serverAPI") }
        do {
            try await client.finishTransaction(job.subject)
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.description)")
        }
    }
}
