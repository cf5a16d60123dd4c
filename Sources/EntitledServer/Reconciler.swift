import AppStore
import AppStoreServerAPI
import Foundation
import Storage

/// What one reconciliation pass found (`entitled reconcile` prints its ``description``).
public struct ReconcileReport: Sendable, Equatable, CustomStringConvertible {
    /// History pages read.
    public var pages = 0
    /// Notifications in them.
    public var notifications = 0
    /// Notifications stored now: the server had missed them.
    public var new = 0
    /// Notifications the server already had.
    public var duplicates = 0
    /// Notifications refused by verification or mapping (recorded as rejected).
    public var rejected = 0
    /// App and environment pairs skipped because another process holds their lease.
    public var skipped: [ReconcileKey] = []

    public init() {}

    public var description: String {
        "pages \(pages), notifications \(notifications), new \(new), duplicates \(duplicates)"
            + (rejected > 0 ? ", rejected \(rejected)" : "")
            + (skipped.isEmpty ? "" : ", skipped \(skipped.map(\.description).joined(separator: ", ")) (another process reconciles it)")
    }

    static func += (lhs: inout ReconcileReport, rhs: ReconcileReport) {
        lhs.pages += rhs.pages
        lhs.notifications += rhs.notifications
        lhs.new += rhs.new
        lhs.duplicates += rhs.duplicates
        lhs.rejected += rhs.rejected
        lhs.skipped += rhs.skipped
    }
}

/// Why a reconciliation pass stopped; the watermark did not move.
public enum ReconcileError: Error, Sendable, CustomStringConvertible {
    /// Apple's API failed (after the client's retries).
    case api(ServerAPIError)
    /// Storage failed.
    case storage(String)
    /// The lease expired during the pass and another process took it.
    case leaseLost(ReconcileKey)

    public var description: String {
        switch self {
        case .api(let error): error.description
        case .storage(let message): "storage: \(message)"
        case .leaseLost(let key): "lost the reconciliation lease of \(key) to another process"
        }
    }
}

/// Reconciles one app with Apple's notification history: reads every notification Apple sent from
/// the stored watermark (minus ``overlapMilliseconds``) to now, page by page, and ingests each one
/// through ``Ingest`` with source `reconcile` (duplicates stay duplicates). The
/// watermark advances only after every notification of the window is committed. One process at a
/// time per app and environment (a lease in ``ReconcileStateStore``).
public struct Reconciler: Service {
    /// Each window starts this much before the watermark: a notification signed just before the
    /// last pass ended, but listed by Apple only later, is still read.
    public static let overlapMilliseconds: Int64 = 3_600_000
    /// The first window when there is no watermark: Apple's whole retry schedule (1, 12, 24, 48,
    /// 72 h — 6.5 days) fits, so nothing Apple still retries is missed.
    public static let initialLookbackMilliseconds: Int64 = 7 * 86_400_000
    /// Apple keeps 180 days of history and refuses older start dates.
    public static let historyLimitMilliseconds: Int64 = 180 * 86_400_000
    /// How long a lease lasts without renewal (renewed at every page).
    public static let leaseMilliseconds: Int64 = 15 * 60_000
    /// Pages read per window at most (20 notifications per page: 200,000 notifications). A window
    /// that holds more, or a history whose pagination token repeats, fails the pass with the
    /// watermark unmoved; smaller windows (`entitled reconcile --since/--until`) get through.
    public static let maxPages = 10_000

    public let bundleId: String
    /// Production and/or Sandbox: where the app's notifications come from.
    public let environments: [AppStoreEnvironment]
    /// The interval of ``run(every:sleeper:report:)`` in `serve`.
    public let everyMinutes: Int
    let client: AppStoreServerAPIClient
    let ingest: Ingest
    let state: any ReconcileStateStore
    let clock: any EpochClock
    /// This process's lease owner id.
    let owner: String
    /// Where passes and the watermark are reported, if anywhere.
    let metrics: ServerMetrics?
    /// Pages read per window at most (``maxPages`` unless a test sets fewer).
    let pageLimit: Int

    public init(
        bundleId: String, environments: [AppStoreEnvironment], everyMinutes: Int, client: AppStoreServerAPIClient,
        ingest: Ingest, state: any ReconcileStateStore, clock: any EpochClock, owner: String = UUID().uuidString,
        metrics: ServerMetrics? = nil, pageLimit: Int = Reconciler.maxPages
    ) {
        self.bundleId = bundleId
        self.environments = environments
        self.everyMinutes = everyMinutes
        self.client = client
        self.ingest = ingest
        self.state = state
        self.clock = clock
        self.owner = owner
        self.metrics = metrics
        self.pageLimit = pageLimit
    }

    /// One pass over each environment. `since` and `until` (epoch ms) replace the window's start
    /// (watermark − overlap) and end (now); the watermark advances to the window's end only when
    /// the window reached back to it.
    public func runOnce(since: Int64? = nil, until: Int64? = nil) async throws(ReconcileError) -> ReconcileReport {
        var report = ReconcileReport()
        for environment in environments {
            report += try await pass(environment, since: since, until: until)
        }
        return report
    }

    /// ``run(sleeper:report:)`` on real time, each pass's report logged.
    public func run() async {
        await run(sleeper: TaskSleeper()) { result in
            switch result {
            case .success(let report):
                ServerLog.event(
                    "reconciled",
                    ["app": bundleId, "pages": "\(report.pages)", "notifications": "\(report.notifications)",
                     "new": "\(report.new)", "duplicates": "\(report.duplicates)", "rejected": "\(report.rejected)",
                     "skipped": "\(report.skipped.count)"])
            case .failure(let error):
                ServerLog.event("reconciliation failed", ["app": bundleId, "error": error.description], level: .error)
            }
        }
    }

    /// A pass now and then every ``everyMinutes`` until the task is cancelled; a failed pass is
    /// reported and the next one starts from the same watermark.
    public func run(sleeper: any Sleeper, report: @Sendable (Result<ReconcileReport, ReconcileError>) -> Void) async {
        while !Task.isCancelled {
            do {
                report(.success(try await runOnce()))
            } catch {
                report(.failure(error))
            }
            do {
                try await sleeper.sleep(milliseconds: Int64(everyMinutes) * 60_000)
            } catch {
                return
            }
        }
    }

    func pass(_ environment: AppStoreEnvironment, since: Int64?, until: Int64?) async throws(ReconcileError) -> ReconcileReport {
        let labels = [bundleId, environment.rawValue]
        do {
            let report = try await window(environment, since: since, until: until)
            metrics?.reconcilePasses.add(labels + [report.skipped.isEmpty ? "ok" : "skipped"])
            return report
        } catch {
            metrics?.reconcilePasses.add(labels + ["failed"])
            throw error
        }
    }

    private func window(_ environment: AppStoreEnvironment, since: Int64?, until: Int64?) async throws(ReconcileError) -> ReconcileReport {
        let key = ReconcileKey(bundleId: bundleId, environment: environment.rawValue)
        let now = clock.nowMilliseconds()
        var report = ReconcileReport()
        let watermark: Int64?
        switch try await lease(key, now: now) {
        case .held:
            report.skipped = [key]
            return report
        case .acquired(let stored):
            watermark = stored
        }
        let end = until ?? now
        let start = max(since ?? ((watermark ?? now - Self.initialLookbackMilliseconds) - Self.overlapMilliseconds),
                        now - Self.historyLimitMilliseconds + 60_000)
        do throws(ReconcileError) {
            let request = NotificationHistoryRequest(startDate: start, endDate: end)
            var token: String?
            var trail = PageTrail(maxPages: pageLimit)
            repeat {
                let page: NotificationHistoryPage
                do throws(ServerAPIError) {
                    page = try await client.notificationHistory(request, paginationToken: token, environment: environment)
                } catch {
                    throw ReconcileError.api(error)
                }
                report.pages += 1
                // Items that failed the client's verification go through the ingest too: it refuses
                // them again and records each as rejected, and the rest of the window goes on.
                for signedPayload in page.notifications.map(\.notification.jws) + page.unverified.map(\.signedPayload) {
                    report.notifications += 1
                    do throws(IngestError) {
                        switch try await ingest.notificationRecordingRejection(signedPayload: signedPayload, source: .reconcile) {
                        case .accepted: report.new += 1
                        case .duplicate: report.duplicates += 1
                        }
                    } catch {
                        switch error {
                        case .rejected(let rejection) where rejection.isRetryable: throw ReconcileError.storage(rejection.message)
                        case .rejected: report.rejected += 1
                        case .storage(let failure): throw ReconcileError.storage(failure.message)
                        }
                    }
                }
                do throws(ServerAPIError) {
                    token = try trail.next(hasMore: page.hasMore, token: page.paginationToken)
                } catch {
                    throw ReconcileError.api(error)
                }
                if token != nil {
                    guard case .acquired = try await lease(key, now: clock.nowMilliseconds()) else { throw ReconcileError.leaseLost(key) }
                }
            } while token != nil
            // Every notification up to `end` is committed: only now may the watermark move.
            let coveredFromWatermark = watermark.map { start <= $0 - Self.overlapMilliseconds || since == nil } ?? true
            if coveredFromWatermark {
                let held: Bool
                do {
                    held = try await state.advanceReconcileWatermark(key, owner: owner, to: end, now: clock.nowMilliseconds())
                } catch {
                    throw ReconcileError.storage("\(error)")
                }
                guard held else { throw ReconcileError.leaseLost(key) }
                metrics?.reconcileWatermark.set([bundleId, environment.rawValue], Double(end) / 1000)
            }
        } catch {
            try? await state.releaseReconcileLease(key, owner: owner)
            throw error
        }
        try? await state.releaseReconcileLease(key, owner: owner)
        return report
    }

    func lease(_ key: ReconcileKey, now: Int64) async throws(ReconcileError) -> ReconcileLease {
        do {
            return try await state.acquireReconcileLease(key, owner: owner, now: now, expiresAt: now + Self.leaseMilliseconds)
        } catch {
            throw .storage("\(error)")
        }
    }
}
