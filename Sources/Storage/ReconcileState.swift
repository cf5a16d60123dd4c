import Entitlements

/// Which notification history a reconciliation reads: one app in one of Apple's environments.
public struct ReconcileKey: Sendable, Hashable, CustomStringConvertible {
    public var bundleId: String
    /// `Production` or `Sandbox`.
    public var environment: String

    public init(bundleId: String, environment: String) {
        self.bundleId = bundleId
        self.environment = environment
    }

    public var description: String { "\(bundleId) (\(environment))" }
}

/// Reconciliation bookkeeping (table `reconcile_state`): per app and environment, how far Apple's
/// notification history has been read (the watermark), and which process is reading it (a lease).
///
/// The lease makes one process at a time reconcile an app, also with several servers on one
/// PostgreSQL: taking it is one atomic upsert that succeeds only when the lease is free, expired or
/// already the caller's. The watermark moves only forward and only by the lease holder, after the
/// notifications it covers are committed.
public protocol ReconcileStateStore: Sendable {
    /// Takes (or renews) the lease on `key` for `owner` until `expiresAt` when it is free, expired
    /// at `now`, or already `owner`'s. Returns the stored watermark (nil: never reconciled) when
    /// the lease is the caller's, and `.held` when another process holds it.
    func acquireReconcileLease(_ key: ReconcileKey, owner: String, now: Int64, expiresAt: Int64) async throws -> ReconcileLease

    /// Moves the watermark to `watermark` (never backwards) if `owner` still holds the lease;
    /// false when it does not (the lease expired and was taken).
    func advanceReconcileWatermark(_ key: ReconcileKey, owner: String, to watermark: Int64, now: Int64) async throws -> Bool

    /// Gives the lease up if `owner` holds it.
    func releaseReconcileLease(_ key: ReconcileKey, owner: String) async throws

    /// The purchase tokens of `packageName`'s Google Play purchases (subscriptions and one-time
    /// products) the ledger holds snapshots of, in order above `after`, at most `limit` (1…1000):
    /// what a Play catch-up asks Google about again.
    func playPurchaseTokens(packageName: String, after: String, limit: Int) async throws -> [String]

    /// The facts filed under a Google Play purchase token (its snapshots, voidings and order prices), whoever
    /// holds it, oldest first, decoded by `projector`: what the catch-ups compare Google's answers with.
    func playFacts(purchaseToken: String, projector: Projector) async throws -> [Fact]
}

/// The outcome of ``ReconcileStateStore/acquireReconcileLease(_:owner:now:expiresAt:)``.
public enum ReconcileLease: Sendable, Hashable {
    /// The caller holds the lease; the watermark (epoch ms) when there is one.
    case acquired(watermark: Int64?)
    /// Another process holds it.
    case held
}


extension SessionBackedStore {
    func playFacts(purchaseToken: String, projector: Projector) async throws -> [Fact] {
        try await read { session in
            try session.query(
                """
                SELECT payload, payload_packed FROM facts
                WHERE original_transaction_id = \(purchaseToken) AND kind IN ('playSubscription', 'playProduct', 'playVoided', 'playOrder')
                ORDER BY id
                """
            ).compactMap { row in projector.decode(try FactPayload.text(row)) }
        }
    }

    func playPurchaseTokens(packageName: String, after: String, limit: Int) async throws -> [String] {
        let limit = try Self.exportLimit(limit)
        return try await read { session in
            try session.values(
                """
                SELECT DISTINCT original_transaction_id FROM facts
                WHERE kind IN ('playSubscription', 'playProduct') AND bundle_id = \(packageName) AND original_transaction_id > \(after)
                ORDER BY original_transaction_id LIMIT \(limit)
                """, as: String.self)
        }
    }

    func acquireReconcileLease(_ key: ReconcileKey, owner: String, now: Int64, expiresAt: Int64) async throws -> ReconcileLease {
        try await write { session in
            let rows = try session.query(
                """
                INSERT INTO reconcile_state (bundle_id, environment, watermark, lease_owner, lease_expires_at, updated_at)
                VALUES (\(key.bundleId), \(key.environment), NULL, \(owner), \(expiresAt), \(now))
                ON CONFLICT (bundle_id, environment) DO UPDATE
                SET lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at, updated_at = excluded.updated_at
                WHERE reconcile_state.lease_owner IS NULL OR reconcile_state.lease_owner = excluded.lease_owner
                    OR reconcile_state.lease_expires_at <= excluded.updated_at
                RETURNING watermark
                """)
            guard let row = rows.first else { return .held }
            return .acquired(watermark: try row.single(Int64?.self))
        }
    }

    func advanceReconcileWatermark(_ key: ReconcileKey, owner: String, to watermark: Int64, now: Int64) async throws -> Bool {
        try await write { session in
            let rows = try session.query(
                """
                UPDATE reconcile_state
                SET watermark = CASE WHEN watermark IS NULL OR watermark < \(watermark) THEN \(watermark) ELSE watermark END, updated_at = \(now)
                WHERE bundle_id = \(key.bundleId) AND environment = \(key.environment) AND lease_owner = \(owner)
                RETURNING watermark
                """)
            return !rows.isEmpty
        }
    }

    func releaseReconcileLease(_ key: ReconcileKey, owner: String) async throws {
        _ = try await write { session in
            try session.query(
                """
                UPDATE reconcile_state SET lease_owner = NULL, lease_expires_at = NULL
                WHERE bundle_id = \(key.bundleId) AND environment = \(key.environment) AND lease_owner = \(owner)
                """)
        }
    }
}
