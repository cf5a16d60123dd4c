import AppStore
import EntitledConfig
import Exports
import Foundation
import HTTPClient
import Storage

/// What one run of an export did (``ScheduledExport/runOnce()``).
public enum ExportRunResult: Sendable, Equatable {
    /// Not due, or another process runs it.
    case notDue
    /// Every file stored and the watermark moved to `through`; the object keys written, by table
    /// (a table with no changed row gets no file).
    case committed(through: Int64, keys: [ExportTable: String], rows: [ExportTable: Int])
}

/// Why a run failed; its window is redone by the next attempt.
public struct ExportRunError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// One configured export (`exports[]`) as a background service: every ``pollMilliseconds`` it
/// tries to claim its run (``ExportStateStore``: at most once per `everyHours` across every server
/// on the database), writes each table's rows that changed since the committed watermark to a
/// local file a page at a time, stores each file at its destination, and only then commits the
/// watermark. A run that fails is retried over the same window (same files, same keys, so a retry
/// replaces what the failed run stored instead of adding to it).
public struct ScheduledExport: Service {
    /// A row is exported once it is this old: a transaction still in flight at the run's start
    /// commits rows with a change time after the window's end, never inside it.
    public static let settleMilliseconds: Int64 = 5 * 60_000
    /// How long a claim holds without renewal (renewed while the run goes on).
    public static let leaseMilliseconds: Int64 = 30 * 60_000
    /// How often the service asks whether its run is due.
    public static let pollMilliseconds: Int64 = 60_000
    /// Rows read per page.
    static let pageSize = 1000

    public let settings: ExportSettings
    let store: any LedgerStore
    let projector: Projector
    let sink: any ExportSink
    let clock: any EpochClock
    let owner: String
    let metrics: ServerMetrics?
    let scratch: URL

    /// - Parameters:
    ///   - sink: Where the files go; nil: the destination's own (``S3Uploader`` over `outbound`, or ``FileDestination``).
    ///   - scratch: The folder the files are written to before they are stored (the system's temporary folder by default).
    public init(
        settings: ExportSettings, store: any LedgerStore, projector: Projector, clock: any EpochClock, sink: (any ExportSink)? = nil,
        outbound: (any OutboundHTTP)? = nil, owner: String = UUID().uuidString, metrics: ServerMetrics? = nil,
        scratch: URL = FileManager.default.temporaryDirectory
    ) {
        self.settings = settings
        self.store = store
        self.projector = projector
        self.clock = clock
        self.owner = owner
        self.metrics = metrics
        self.scratch = scratch
        if let sink {
            self.sink = sink
        } else {
            switch settings.destination {
            case .file(let directory):
                self.sink = FileDestination(directory: directory)
            case .s3(_, let prefix):
                // `s3Location` and `credentials` are set for every s3:// export the loader accepts.
                let client = S3Client(
                    location: settings.s3Location!, credentials: settings.credentials ?? AWSCredentials(accessKeyId: "", secretAccessKey: ""),
                    http: outbound ?? CurlHTTP(maxResponseBytes: 1 << 20), clock: clock)
                self.sink = S3Uploader(client: client, prefix: prefix)
            }
        }
    }

    /// The export's name in `export_state`: its destination (unique among the exports).
    public var name: String { settings.destination.description }

    public func run() async {
        await run(sleeper: TaskSleeper())
    }

    /// Tries a run now and then every ``pollMilliseconds`` until the task is cancelled.
    public func run(sleeper: any Sleeper) async {
        while !Task.isCancelled {
            do {
                if case .committed(let through, let keys, let rows) = try await runOnce() {
                    ServerLog.event(
                        "export committed",
                        ["export": name, "through": "\(through)", "files": "\(keys.count)", "rows": "\(rows.values.reduce(0, +))"])
                }
            } catch {
                ServerLog.event("export failed", ["export": name, "error": "\(error)"], level: .error)
            }
            do {
                try await sleeper.sleep(milliseconds: Self.pollMilliseconds)
            } catch {
                return
            }
        }
    }

    /// Claims the run if it is due and runs it.
    /// - Throws: ``ExportRunError`` when the run failed (it is retried later over the same window).
    @discardableResult
    public func runOnce() async throws(ExportRunError) -> ExportRunResult {
        let started = clock.nowMilliseconds()
        let claim: ExportClaim
        do {
            guard
                let claimed = try await store.claimExport(
                    name, owner: owner, now: started, leaseUntil: started + Self.leaseMilliseconds, through: started - Self.settleMilliseconds)
            else { return .notDue }
            claim = claimed
        } catch {
            throw ExportRunError(message: "storage: \(error)")
        }
        let window = ExportWindow(after: claim.after, through: claim.through)
        var keys: [ExportTable: String] = [:]
        var rows: [ExportTable: Int] = [:]
        do {
            var lease = Lease(export: self, renewAt: started + Self.leaseMilliseconds / 2)
            for table in settings.tables {
                let key = Self.key(table: table, window: window, format: settings.format)
                let count = try await write(table, window: window, key: key, lease: &lease)
                rows[table] = count
                if count > 0 { keys[table] = key }
            }
        } catch {
            let now = clock.nowMilliseconds()
            let retryAt = now + min(Int64(settings.everyHours) * 3_600_000, 300_000 << Int64(min(claim.failures, 4)))
            _ = try? await store.finishExport(name, owner: owner, outcome: .failed(retryAt: retryAt, error: "\(error)"), now: now)
            metrics?.exportRuns.add([name, "failed"])
            throw ExportRunError(message: "\(error)")
        }
        let now = clock.nowMilliseconds()
        let committed: Bool
        do {
            committed = try await store.finishExport(
                name, owner: owner, outcome: .committed(nextRunAt: started + Int64(settings.everyHours) * 3_600_000), now: now)
        } catch {
            metrics?.exportRuns.add([name, "failed"])
            throw ExportRunError(message: "storage: \(error)")
        }
        guard committed else {
            metrics?.exportRuns.add([name, "failed"])
            throw ExportRunError(message: "lost the lease of export \(name) to another process")
        }
        metrics?.exportRuns.add([name, "ok"])
        metrics?.exportLastSuccess.set([name], Double(now) / 1000)
        for (table, count) in rows { metrics?.exportRows.add([name, table.rawValue], Double(count)) }
        return .committed(through: window.through, keys: keys, rows: rows)
    }

    /// The object key of a table's file for a window (relative to the destination's prefix or
    /// folder): `TABLE/YYYY-MM-DD/part-AFTER-THROUGH.EXT`, the day that of the window's end (UTC),
    /// AFTER and THROUGH the window's bounds in epoch milliseconds (0: the first run).
    public static func key(table: ExportTable, window: ExportWindow, format: ExportFormat) -> String {
        let day = String(ExportValue.iso8601(window.through).prefix(10))
        return "\(table.rawValue)/\(day)/part-\(window.after ?? 0)-\(window.through).\(format.fileExtension)"
    }

    /// Renews the claim when half of it has passed.
    struct Lease {
        let export: ScheduledExport
        var renewAt: Int64

        mutating func keep() async throws {
            let now = export.clock.nowMilliseconds()
            guard now >= renewAt else { return }
            guard
                try await export.store.renewExportLease(
                    export.name, owner: export.owner, now: now, leaseUntil: now + ScheduledExport.leaseMilliseconds)
            else { throw ExportRunError(message: "lost the lease of export \(export.name) to another process") }
            renewAt = now + ScheduledExport.leaseMilliseconds / 2
        }
    }

    /// Writes one table's window to a scratch file and stores it under `key` when it has rows.
    /// Returns the rows written.
    private func write(_ table: ExportTable, window: ExportWindow, key: String, lease: inout Lease) async throws -> Int {
        switch table {
        case .customers:
            return try await write(ExportTables.customers, key: key, lease: &lease, start: Int64.min, cursor: \.id) {
                try await store.exportCustomers(window, afterID: $0, limit: Self.pageSize)
            }
        case .subscriptions:
            return try await write(ExportTables.subscriptions, key: key, lease: &lease, start: "", cursor: \.owned.subscription.originalTransactionId) {
                try await store.exportSubscriptions(window, after: $0, limit: Self.pageSize)
            }
        case .transactions:
            return try await write(ExportTables.transactions, key: key, lease: &lease, start: Int64.min, cursor: \.id) {
                try await store.exportTransactions(window, afterID: $0, limit: Self.pageSize, projector: projector)
            }
        case .events:
            return try await write(ExportTables.events, key: key, lease: &lease, start: Int64.min, cursor: \.sequence) {
                try await store.exportEvents(window, afterSequence: $0, limit: Self.pageSize)
            }
        }
    }

    private func write<Row, Cursor>(
        _ columns: [ExportColumn<Row>], key: String, lease: inout Lease, start: Cursor, cursor: KeyPath<Row, Cursor>,
        page: (Cursor) async throws -> [Row]
    ) async throws -> Int {
        let file = scratch.appendingPathComponent("entitled-export-\(UUID().uuidString).\(settings.format.fileExtension)")
        defer { try? FileManager.default.removeItem(at: file) }
        let writer = try ExportFileWriter(url: file, format: settings.format, columns: columns)
        var after = start
        while true {
            let rows = try await page(after)
            for row in rows { try writer.write(row) }
            try await lease.keep()
            guard rows.count == Self.pageSize, let last = rows.last else { break }
            after = last[keyPath: cursor]
        }
        try writer.finish()
        guard writer.rows > 0 else { return 0 }
        try await sink.store(file: file, key: key, contentType: settings.format.contentType)
        return writer.rows
    }
}
