import AppStore
import EntitledConfig
import Storage

/// Deletes the audit records of rejected messages once they are older than the retention
/// (`storage.rejectedRetentionDays`), judged on the server's clock; in the same pass, deletes
/// logged offer signatures older than `offerSigning.retentionDays` and retention requests older
/// than 400 days, and scrubs the erased ids from `customer.deleted` events whose deliveries settled and that the feed kept for
/// ``erasureEventRetentionMilliseconds`` (docs/privacy.md).
public struct RejectedPurge: Service {
    public let store: any LedgerStore
    public let clock: any EpochClock
    /// How long a rejected message is kept, in milliseconds.
    public let retentionMilliseconds: Int64
    /// How long a logged offer signature is kept, in milliseconds (`offerSigning.retentionDays`).
    public let offerSignatureRetentionMilliseconds: Int64

    public init(
        store: any LedgerStore, clock: any EpochClock, retentionDays: Int,
        offerSignatureRetentionDays: Int = OfferSigningSettings().retentionDays
    ) {
        self.store = store
        self.clock = clock
        self.retentionMilliseconds = Int64(retentionDays) * 86_400_000
        self.offerSignatureRetentionMilliseconds = Int64(offerSignatureRetentionDays) * 86_400_000
    }

    /// How long a retention request's record is kept: 400 days, past a yearly subscription's fate.
    public static let retentionRequestMilliseconds: Int64 = 400 * 86_400_000

    /// How long a `customer.deleted` event names the erased ids at least: 7 days, for the pull feed's readers.
    public static let erasureEventRetentionMilliseconds: Int64 = 7 * 86_400_000

    /// One pass: deletes what was received more than the retention before now and scrubs settled
    /// erasure events; returns how many rejected messages it deleted.
    @discardableResult
    public func runOnce() async throws -> Int {
        let now = clock.nowMilliseconds()
        _ = try await store.scrubErasureEvents(recordedBefore: now - Self.erasureEventRetentionMilliseconds)
        _ = try await store.purgeOfferSignatures(signedBefore: now - offerSignatureRetentionMilliseconds)
        _ = try await store.purgeRetentionRequests(requestedBefore: now - Self.retentionRequestMilliseconds)
        return try await store.purgeRejected(receivedBefore: now - retentionMilliseconds)
    }

    /// How often `serve` and `dev` purge.
    public static let interval: Duration = .seconds(3600)

    /// A pass now and then one every ``interval`` until the task is cancelled, each logged.
    public func run() async {
        await run(every: Self.interval) { result in
            switch result {
            case .success(let count) where count > 0: ServerLog.event("rejected messages purged", ["count": "\(count)"])
            case .success: break
            case .failure(let error): ServerLog.event("rejected messages purge failed", ["error": "\(error)"], level: .error)
            }
        }
    }

    /// A pass now and then one every `interval` until the task is cancelled. A failed pass (storage
    /// unavailable) is reported and the next one tries again.
    public func run(every interval: Duration, report: @Sendable (Result<Int, any Error>) -> Void) async {
        while !Task.isCancelled {
            do {
                report(.success(try await runOnce()))
            } catch {
                report(.failure(error))
            }
            try? await Task.sleep(for: interval)
        }
    }
}
