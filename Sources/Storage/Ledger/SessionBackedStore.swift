import Entitlements

/// A store whose operations are `Ledger` calls run in a read or write session: SQLite and
/// PostgreSQL differ only in how they run sessions (one writer thread with group commit, or a
/// connection pool), so the operations themselves are written once, here.
protocol SessionBackedStore: LedgerStore {
    /// The test hook passed to write transactions.
    var faultInjector: FaultInjector? { get }
    /// Told of committed projection changes.
    var ledgerObserver: (any LedgerObserver)? { get }
    /// The options it was opened with.
    var configuration: StoreConfiguration { get }
    /// Customers recomputed per transaction by `rebuild`.
    var rebuildChunk: Int { get }
    /// Runs `body` in a write transaction (committed when it returns).
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T
    /// Runs `body` on a read session.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T
    /// Runs `body`, a read of the customer `appUserId`, on a read session that has every write
    /// committed for that customer before the call (PostgreSQL replicas: ``ReplicaNeed``).
    func read<T: Sendable>(customer appUserId: String, _ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T
    /// Folds the rollup journal in the background (``RollupWrites/journaled``).
    var rollupFolder: RollupFolder { get }
}

extension SessionBackedStore {
    /// Whether the schema has `rollup_journal`: always, but for a test's database left at an
    /// older version (``StoreConfiguration/migrateThrough``).
    var hasRollupJournal: Bool { (configuration.migrateThrough ?? .max) >= Schema.rollupJournal.version }

    /// The folder commits on `dialect` tell of their journal rows; nil: they write directly.
    func journal(_ dialect: SQLDialect) -> RollupFolder? {
        hasRollupJournal && (configuration.rollupWrites ?? .standard(dialect)) == .journaled ? rollupFolder : nil
    }

    /// Folds the rollup journal until it is empty (``RollupFolder``'s work), telling the ledger's
    /// observer. A fold that fails leaves its rows for the next one; the failure is logged.
    func foldRollupJournal() async {
        do {
            while true {
                let rows = try await write { try Ledger(session: $0, fault: nil).foldRollupJournal() }
                ledgerObserver?.rollupJournalFolded(rows: rows)
                if rows < Ledger.foldLimit { return }
            }
        } catch {
            ledgerObserver?.rollupJournalFoldFailed()
            configuration.log?("rollup journal fold failed", ["error": "\(error)"])
        }
    }

    /// Once open: a fold soon of the journal rows left by a process that ended without folding them
    /// (killed, or its database gone when it closed). Reads count them meanwhile either way; this
    /// keeps the journal from holding them until the next commit.
    func foldLeftRows(_ dialect: SQLDialect) {
        journal(dialect)?.journalWritten()
    }

    /// Starts the folder on this store (weakly held: the folder never keeps a closed store).
    func startFolding() where Self: AnyObject {
        rollupFolder.start { [weak self] in await self?.foldRollupJournal() }
    }
}

extension SessionBackedStore {
    /// One database (SQLite, or PostgreSQL without replicas): every read sees every commit.
    func read<T: Sendable>(customer appUserId: String, _ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await read(body)
    }
}

extension SessionBackedStore {
    func ingest(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim?, projector: Projector, now: Int64
    ) async throws -> IngestResult {
        // Encoded and digested here, on the caller's thread, not on the single writer.
        var rows = facts.map { FactRow($0.fact, signed: $0.signed, projector: projector) }
        let packed = try FactRow.pack(&rows, body: message.body)
        return try await observedWrite { [rows] ledger in
            try ledger.ingest(message, rows: rows, packed: packed, claim: claim, projector: projector, now: now)
        }
    }

    func recordRejected(_ message: ReceivedMessage, code: String) async throws -> Int64 {
        try await write { try Ledger(session: $0, fault: nil).recordRejected(message, code: code) }
    }

    func purgeRejected(receivedBefore cutoff: Int64) async throws -> Int {
        // Chunks, each its own transaction: the single SQLite writer is never held for long.
        let chunk = 1000
        var total = 0
        while true {
            let deleted = try await write { try Ledger(session: $0, fault: nil).purgeRejected(receivedBefore: cutoff, limit: chunk) }
            total += deleted
            if deleted < chunk { return total }
        }
    }

    func customer(appUserId: String) async throws -> CustomerRecord? {
        try await read(customer: appUserId) { try Ledger(session: $0, fault: nil).customer(appUserId: appUserId) }
    }

    func ensureCustomer(appUserId: String, appAccountToken: String?, projector: Projector, now: Int64) async throws -> CustomerRecord {
        if let existing = try await customer(appUserId: appUserId) { return existing }
        return try await observedWrite {
            try $0.ensureCustomer(appUserId: appUserId, appAccountToken: appAccountToken, projector: projector, now: now)
        }
    }

    func projection(appUserId: String) async throws -> StoredProjection? {
        try await read(customer: appUserId) { try Ledger(session: $0, fault: nil).projection(appUserId: appUserId) }
    }

    func reproject(appUserId: String, projector: Projector, now: Int64) async throws -> StoredProjection? {
        try await observedWrite { ledger in
            guard let customer = try ledger.customer(appUserId: appUserId) else { return nil }
            try ledger.recompute(customerID: customer.id, projector: projector, now: now)
            return try ledger.projection(appUserId: appUserId)
        }
    }

    func storeAnswer(_ answer: [UInt8], appUserId: String, document: [UInt8]) async throws -> Bool {
        try await write { try Ledger(session: $0, fault: nil).storeAnswer(answer, appUserId: appUserId, document: document) }
    }

    func facts(appUserId: String, projector: Projector) async throws -> [StoredFact] {
        try await read(customer: appUserId) { session in
            let ledger = Ledger(session: session, fault: nil)
            guard let customer = try ledger.customer(appUserId: appUserId) else { return [] }
            return try ledger.facts(of: customer, projector: projector)
        }
    }

    func history(appUserId: String, cursor: String?, limit: Int) async throws -> HistoryPage {
        try await read(customer: appUserId) { try Ledger(session: $0, fault: nil).history(appUserId: appUserId, cursor: cursor, limit: limit) }
    }

    func subscription(originalTransactionId: String) async throws -> OwnedSubscription? {
        try await read { try Ledger(session: $0, fault: nil).subscription(otid: originalTransactionId) }
    }

    func notificationReceivedAt(notificationUUID: String) async throws -> Int64? {
        try await read { session in
            try session.value("SELECT received_at FROM notifications WHERE \(LedgerKeys.notification(uuid: notificationUUID, dialect: session.dialect))", as: Int64.self)
        }
    }

    func ping() async throws {
        _ = try await read { try $0.query("SELECT 1") }
    }

    func rebuild(projector: Projector, now: Int64) async throws -> RebuildReport {
        try await chunked { cursor in
            try await observedWrite {
                try $0.rebuildChunk(afterID: cursor, limit: rebuildChunk, projector: projector, now: now)
            }
        }
    }

    func compareProjections(projector: Projector) async throws -> RebuildReport {
        try await chunked { cursor in
            // One snapshot per chunk: a customer's state and its facts are read as of one instant
            // even while the server writes.
            try await read { session in
                try Ledger.inSnapshot(session) { try $0.compareChunk(afterID: cursor, limit: rebuildChunk, projector: projector) }
            }
        }
    }

    /// Runs `step` over every customer, chunk after chunk (each its own transaction), and sums up.
    private func chunked(_ step: (Int64) async throws -> Ledger.RebuildChunk) async throws -> RebuildReport {
        var after: Int64? = 0
        var total = 0
        var changed: [String] = []
        var failed: [ProjectionFailure] = []
        while let cursor = after {
            let chunk = try await step(cursor)
            after = chunk.next
            total += chunk.checked
            changed += chunk.changed
            failed += chunk.failed
        }
        return RebuildReport(
            customers: total, differences: changed.count, changedCustomers: changed.sorted(),
            failedCustomers: failed.sorted { $0.appUserId < $1.appUserId })
    }
}

extension SessionBackedStore {
    /// Test support: every row of a query, each value as text (nil for NULL).
    func _texts(_ query: SQLQuery) async throws -> [[String?]] {
        try await read { session in
            try session.query(query).map { row in try row.values.indices.map { try row.optionalText($0) } }
        }
    }
}

extension Ledger {
    /// Runs `body` in one read-only snapshot of `session` (PostgreSQL: repeatable read), so that
    /// several statements read the database as of one instant (the rollups and the journal, with a
    /// fold in between seen either whole or not at all; a customer's state and its facts).
    static func inSnapshot<T>(_ session: any SQLSession, _ body: (Ledger) throws -> T) throws -> T {
        try session.execute(session.dialect == .postgres ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN")
        do {
            let result = try body(Ledger(session: session, fault: nil))
            try session.execute("COMMIT")
            return result
        } catch {
            try? session.execute("ROLLBACK")
            throw error
        }
    }
}
