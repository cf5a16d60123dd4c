import AppStore
import EntitledServer
import Entitlements
import Foundation
import Synchronization

@testable import Storage

// The test ledger's store: the real SQLite store behind ``TestLedger``'s outage switch, for every
// capability the server uses.

/// `base` behind ``TestLedger``'s switches.
struct SwitchedStore: LedgerStore {
    let base: SQLiteStore
    let switches: TestLedger.Switches

    func up() throws {
        if !switches.state.withLock({ $0.available }) { throw StorageError(.unavailable, "switched off") }
    }

    func ingest(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim?, projector: Projector, now: Int64
    ) async throws -> IngestResult {
        try up()
        let delay = switches.state.withLock { $0.ingestDelayMilliseconds }
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        return try await base.ingest(message, facts: facts, claim: claim, projector: projector, now: now)
    }

    func migrate() async throws -> MigrationReport { try await base.migrate() }
    func events(after: Int64, limit: Int) async throws -> [OutboxEvent] {
        try up()
        return try await base.events(after: after, limit: limit)
    }
    func appendEvent(_ event: OutboxEvent) async throws -> OutboxEvent {
        try up()
        return try await base.appendEvent(event)
    }
    func scrubErasureEvents(recordedBefore: Int64) async throws -> Int {
        try up()
        return try await base.scrubErasureEvents(recordedBefore: recordedBefore)
    }
    func recordRejected(_ message: ReceivedMessage, code: String) async throws -> Int64 {
        try up()
        return try await base.recordRejected(message, code: code)
    }
    func purgeRejected(receivedBefore cutoff: Int64) async throws -> Int {
        try up()
        return try await base.purgeRejected(receivedBefore: cutoff)
    }
    func customer(appUserId: String) async throws -> CustomerRecord? {
        try up()
        return try await base.customer(appUserId: appUserId)
    }
    func ensureCustomer(appUserId: String, appAccountToken: String?, projector: Projector, now: Int64) async throws
        -> CustomerRecord
    {
        try up()
        return try await base.ensureCustomer(appUserId: appUserId, appAccountToken: appAccountToken, projector: projector, now: now)
    }
    func projection(appUserId: String) async throws -> StoredProjection? {
        try up()
        return try await base.projection(appUserId: appUserId)
    }
    func reproject(appUserId: String, projector: Projector, now: Int64) async throws -> StoredProjection? {
        try up()
        return try await base.reproject(appUserId: appUserId, projector: projector, now: now)
    }
    func storeAnswer(_ answer: [UInt8], appUserId: String, document: [UInt8]) async throws -> Bool {
        try up()
        return try await base.storeAnswer(answer, appUserId: appUserId, document: document)
    }
    func stateNow(appUserId: String) throws -> ImmediateRead<StoredState?> {
        try up()
        return try base.stateNow(appUserId: appUserId)
    }
    func changeMarkNow() throws -> ImmediateRead<Int64> {
        try up()
        return try base.changeMarkNow()
    }
    func facts(appUserId: String, projector: Projector) async throws -> [StoredFact] {
        try up()
        return try await base.facts(appUserId: appUserId, projector: projector)
    }
    func history(appUserId: String, cursor: String?, limit: Int) async throws -> HistoryPage {
        try up()
        return try await base.history(appUserId: appUserId, cursor: cursor, limit: limit)
    }
    func subscription(originalTransactionId: String) async throws -> OwnedSubscription? {
        try up()
        return try await base.subscription(originalTransactionId: originalTransactionId)
    }
    func notificationReceivedAt(notificationUUID: String) async throws -> Int64? {
        try up()
        return try await base.notificationReceivedAt(notificationUUID: notificationUUID)
    }
    func ping() async throws {
        try up()
        try await base.ping()
    }
    func projectionTally() async throws -> ProjectionTally { try await base.projectionTally() }
    func rebuild(projector: Projector, now: Int64) async throws -> RebuildReport {
        try await base.rebuild(projector: projector, now: now)
    }
    func compareProjections(projector: Projector) async throws -> RebuildReport {
        try await base.compareProjections(projector: projector)
    }
    func backup(to path: String) async throws -> BackupReport { try await base.backup(to: path) }
    func close() async { await base.close() }
}

extension SwitchedStore: OfferSignatureLog {
    func recordOfferSignature(_ record: OfferSignatureRecord) async throws {
        try up()
        try await base.recordOfferSignature(record)
    }
    func offerSignatures(appUserId: String, limit: Int) async throws -> [OfferSignatureRecord] {
        try up()
        return try await base.offerSignatures(appUserId: appUserId, limit: limit)
    }
    func purgeOfferSignatures(signedBefore: Int64) async throws -> Int {
        try up()
        return try await base.purgeOfferSignatures(signedBefore: signedBefore)
    }
}

extension SwitchedStore: RetentionLog {
    func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws {
        try up()
        try await base.recordRetentionRequests(records)
    }
    func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord] {
        try up()
        return try await base.undecidedRetentionRequests(requestedBefore: requestedBefore, limit: limit)
    }
    func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws {
        try up()
        try await base.decideRetentionRequests(decisions, checkedAt: checkedAt)
    }
    func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts] {
        try up()
        return try await base.retentionRuleCounts(since: since)
    }
    func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int {
        try up()
        return try await base.purgeRetentionRequests(requestedBefore: requestedBefore)
    }
}

extension SwitchedStore: ConsumableSpending {
    func spend(_ request: SpendRequest, projector: Projector, now: Int64) async throws -> SpendOutcome {
        try up()
        return try await base.spend(request, projector: projector, now: now)
    }
}

extension SwitchedStore: ConsoleStore {
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup {
        try up()
        return try await base.metricRollup(environment: environment, fromDay: fromDay, toDay: toDay)
    }
    func chartRows(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter
    ) async throws -> ChartRows {
        try up()
        return try await base.chartRows(environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: filter)
    }
    func backfillMetrics(projector: Projector, limit: Int) async throws -> Int {
        try up()
        return try await base.backfillMetrics(projector: projector, limit: limit)
    }
    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch] {
        try up()
        return try await base.searchCustomers(query, after: after, limit: limit)
    }
    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth {
        try up()
        return try await base.ingestHealth(since: since, now: now)
    }
    func exactCustomers(_ ids: [String]) async throws -> [CustomerMatch] {
        try up()
        return try await base.exactCustomers(ids)
    }
    func knownTransactions(_ transactionIds: [String]) async throws -> Set<String> {
        try up()
        return try await base.knownTransactions(transactionIds)
    }
    func recordSupportAction(_ action: SupportAction, appUserIds: [String]) async throws {
        try up()
        try await base.recordSupportAction(action, appUserIds: appUserIds)
    }
    func supportActions(appUserId: String, limit: Int) async throws -> [SupportAction] {
        try up()
        return try await base.supportActions(appUserId: appUserId, limit: limit)
    }
}

/// Webhook deliveries through the same outage switch.
extension SwitchedStore: WebhookDeliveryStore {
    func fanOut(endpoint: String, wants: @escaping @Sendable (String, String?) -> Bool, limit: Int, now: Int64) async throws -> Int {
        try up()
        return try await base.fanOut(endpoint: endpoint, wants: wants, limit: limit, now: now)
    }

    func claimDeliveries(endpoint: String, owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        try up()
        return try await base.claimDeliveries(endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
    }

    func finishDelivery(_ id: Int64, owner: String, outcome: WebhookAttemptOutcome, now: Int64) async throws -> Bool {
        try up()
        return try await base.finishDelivery(id, owner: owner, outcome: outcome, now: now)
    }

    func finishAndClaim(
        _ finished: (id: Int64, outcome: WebhookAttemptOutcome), endpoint: String, owner: String, now: Int64, leaseUntil: Int64,
        limit: Int
    ) async throws -> [ClaimedDelivery] {
        try up()
        return try await base.finishAndClaim(finished, endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
    }

    func deliveries(status: WebhookDeliveryStatus?, before: Int64?, limit: Int) async throws -> [WebhookDelivery] {
        try up()
        return try await base.deliveries(status: status, before: before, limit: limit)
    }

    func retryDelivery(_ id: Int64, now: Int64) async throws -> WebhookDelivery? {
        try up()
        return try await base.retryDelivery(id, now: now)
    }

    func pendingDeliveries() async throws -> [String: Int] {
        try up()
        return try await base.pendingDeliveries()
    }

    func webhookStatus(endpoints: [String]) async throws -> [WebhookEndpointStatus] {
        try up()
        return try await base.webhookStatus(endpoints: endpoints)
    }

    func deliveries(customerKey: String, endpoints: [String], limit: Int) async throws -> [WebhookDelivery] {
        try up()
        return try await base.deliveries(customerKey: customerKey, endpoints: endpoints, limit: limit)
    }
}

extension SwitchedStore: CustomerDirectory {
    func addAlias(_ alias: String, to appUserId: String, actor: String?, projector: Projector, now: Int64) async throws -> AliasOutcome {
        try up()
        return try await base.addAlias(alias, to: appUserId, actor: actor, projector: projector, now: now)
    }
    func appendCustomerFact(_ fact: Fact, projector: Projector, now: Int64) async throws -> Bool {
        try up()
        return try await base.appendCustomerFact(fact, projector: projector, now: now)
    }
    func exportCustomer(appUserId: String) async throws -> CustomerExport? {
        try up()
        return try await base.exportCustomer(appUserId: appUserId)
    }
    func eraseCustomer(appUserId: String, actor: String?, now: Int64) async throws -> ErasureReport? {
        try up()
        return try await base.eraseCustomer(appUserId: appUserId, actor: actor, now: now)
    }
}
