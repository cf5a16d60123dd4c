import Entitlements
import Storage

/// The store's other capabilities, passed to the store under the count as they are.
extension CountingStore {
    func enqueueJob(
        kind: String, key: String, bundleId: String, subject: String, subjectTime: Int64?, now: Int64,
        unlessFactsOf originalTransactionId: String?
    ) async throws -> Bool {
        try await base.enqueueJob(
            kind: kind, key: key, bundleId: bundleId, subject: subject, subjectTime: subjectTime, now: now, unlessFactsOf: originalTransactionId)
    }
    func claimJob(owner: String, now: Int64, leaseUntil: Int64) async throws -> DurableJob? {
        try await base.claimJob(owner: owner, now: now, leaseUntil: leaseUntil)
    }
    func finishJob(_ id: Int64, owner: String, outcome: DurableJobOutcome, now: Int64) async throws -> Bool {
        try await base.finishJob(id, owner: owner, outcome: outcome, now: now)
    }
    func jobs(status: DurableJobStatus?, limit: Int) async throws -> [DurableJob] { try await base.jobs(status: status, limit: limit) }
    func unfinishedJobCount(kind: String, subjectTimes: Range<Int64>) async throws -> Int {
        try await base.unfinishedJobCount(kind: kind, subjectTimes: subjectTimes)
    }

    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup {
        try await base.metricRollup(environment: environment, fromDay: fromDay, toDay: toDay)
    }
    func chartRows(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter
    ) async throws -> ChartRows {
        try await base.chartRows(environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: filter)
    }
    func backfillMetrics(projector: Projector, limit: Int) async throws -> Int {
        try await base.backfillMetrics(projector: projector, limit: limit)
    }
    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch] {
        try await base.searchCustomers(query, after: after, limit: limit)
    }
    func exactCustomers(_ ids: [String]) async throws -> [CustomerMatch] { try await base.exactCustomers(ids) }
    func knownTransactions(_ transactionIds: [String]) async throws -> Set<String> { try await base.knownTransactions(transactionIds) }
    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth { try await base.ingestHealth(since: since, now: now) }
    func recordSupportAction(_ action: SupportAction, appUserIds: [String]) async throws {
        try await base.recordSupportAction(action, appUserIds: appUserIds)
    }
    func supportActions(appUserId: String, limit: Int) async throws -> [SupportAction] {
        try await base.supportActions(appUserId: appUserId, limit: limit)
    }

    func addAlias(_ alias: String, to appUserId: String, actor: String?, projector: Projector, now: Int64) async throws -> AliasOutcome {
        try await base.addAlias(alias, to: appUserId, actor: actor, projector: projector, now: now)
    }
    func appendCustomerFact(_ fact: Fact, projector: Projector, now: Int64) async throws -> Bool {
        try await base.appendCustomerFact(fact, projector: projector, now: now)
    }
    func exportCustomer(appUserId: String) async throws -> CustomerExport? { try await base.exportCustomer(appUserId: appUserId) }
    func eraseCustomer(appUserId: String, actor: String?, now: Int64) async throws -> ErasureReport? {
        try await base.eraseCustomer(appUserId: appUserId, actor: actor, now: now)
    }

    func recordConsent(appUserId: String, consented: Bool, now: Int64) async throws {
        try await base.recordConsent(appUserId: appUserId, consented: consented, now: now)
    }
    func consent(appUserId: String) async throws -> Bool? { try await base.consent(appUserId: appUserId) }
    func playOrder(packageName: String, orderId: String) async throws -> PlayOrder? {
        try await base.playOrder(packageName: packageName, orderId: orderId)
    }
    func recordRefundReview(_ review: StoredRefundReview) async throws { try await base.recordRefundReview(review) }
    func refundReviews(orderId: String) async throws -> [StoredRefundReview] { try await base.refundReviews(orderId: orderId) }
    func refundReviews(answered: Bool, since: Int64, limit: Int) async throws -> [StoredRefundReview] {
        try await base.refundReviews(answered: answered, since: since, limit: limit)
    }
    func answerRefundReview(_ review: StoredRefundReview, answer: String, answeredBy: String, now: Int64) async throws
        -> (review: StoredRefundReview, recorded: Bool) {
        try await base.answerRefundReview(review, answer: answer, answeredBy: answeredBy, now: now)
    }
    func refundReviewForwarded(packageName: String, pendingRefundToken: String, now: Int64) async throws {
        try await base.refundReviewForwarded(packageName: packageName, pendingRefundToken: pendingRefundToken, now: now)
    }

    func playPurchaseTokens(packageName: String, after: String, limit: Int) async throws -> [String] {
        try await base.playPurchaseTokens(packageName: packageName, after: after, limit: limit)
    }
    func playFacts(purchaseToken: String, projector: Projector) async throws -> [Fact] {
        try await base.playFacts(purchaseToken: purchaseToken, projector: projector)
    }
    func acquireReconcileLease(_ key: ReconcileKey, owner: String, now: Int64, expiresAt: Int64) async throws -> ReconcileLease {
        try await base.acquireReconcileLease(key, owner: owner, now: now, expiresAt: expiresAt)
    }
    func advanceReconcileWatermark(_ key: ReconcileKey, owner: String, to watermark: Int64, now: Int64) async throws -> Bool {
        try await base.advanceReconcileWatermark(key, owner: owner, to: watermark, now: now)
    }
    func releaseReconcileLease(_ key: ReconcileKey, owner: String) async throws { try await base.releaseReconcileLease(key, owner: owner) }

    func recordOfferSignature(_ record: OfferSignatureRecord) async throws { try await base.recordOfferSignature(record) }
    func offerSignatures(appUserId: String, limit: Int) async throws -> [OfferSignatureRecord] {
        try await base.offerSignatures(appUserId: appUserId, limit: limit)
    }
    func purgeOfferSignatures(signedBefore: Int64) async throws -> Int { try await base.purgeOfferSignatures(signedBefore: signedBefore) }

    func spend(_ request: SpendRequest, projector: Projector, now: Int64) async throws -> SpendOutcome {
        try await base.spend(request, projector: projector, now: now)
    }

    func signedFacts(after afterID: Int64, limit: Int) async throws -> [SignedFactText] {
        try await base.signedFacts(after: afterID, limit: limit)
    }
    func notificationBody(id: Int64) async throws -> [UInt8]? { try await base.notificationBody(id: id) }

    func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws { try await base.recordRetentionRequests(records) }
    func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord] {
        try await base.undecidedRetentionRequests(requestedBefore: requestedBefore, limit: limit)
    }
    func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws {
        try await base.decideRetentionRequests(decisions, checkedAt: checkedAt)
    }
    func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts] { try await base.retentionRuleCounts(since: since) }
    func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int {
        try await base.purgeRetentionRequests(requestedBefore: requestedBefore)
    }

    func backfillPlaceholders(projector: Projector, now: Int64, limit: Int) async throws -> (created: Int, more: Bool) {
        try await base.backfillPlaceholders(projector: projector, now: now, limit: limit)
    }

    func claimExport(_ name: String, owner: String, now: Int64, leaseUntil: Int64, through: Int64) async throws -> ExportClaim? {
        try await base.claimExport(name, owner: owner, now: now, leaseUntil: leaseUntil, through: through)
    }
    func renewExportLease(_ name: String, owner: String, now: Int64, leaseUntil: Int64) async throws -> Bool {
        try await base.renewExportLease(name, owner: owner, now: now, leaseUntil: leaseUntil)
    }
    func finishExport(_ name: String, owner: String, outcome: ExportOutcome, now: Int64) async throws -> Bool {
        try await base.finishExport(name, owner: owner, outcome: outcome, now: now)
    }
    func exportStatuses(now: Int64) async throws -> [ExportStatus] { try await base.exportStatuses(now: now) }
    func exportCustomers(_ window: ExportWindow, afterID: Int64, limit: Int) async throws -> [ExportedCustomer] {
        try await base.exportCustomers(window, afterID: afterID, limit: limit)
    }
    func exportSubscriptions(_ window: ExportWindow, after: String, limit: Int) async throws -> [ExportedSubscription] {
        try await base.exportSubscriptions(window, after: after, limit: limit)
    }
    func exportTransactions(_ window: ExportWindow, afterID: Int64, limit: Int, projector: Projector) async throws -> [ExportedTransaction] {
        try await base.exportTransactions(window, afterID: afterID, limit: limit, projector: projector)
    }
    func exportEvents(_ window: ExportWindow, afterSequence: Int64, limit: Int) async throws -> [OutboxEvent] {
        try await base.exportEvents(window, afterSequence: afterSequence, limit: limit)
    }
}

extension CountingStore {
    func setAttributes(appUserId: String, changes: [String: String?], maxCount: Int, now: Int64) async throws -> AttributeWrite {
        try await base.setAttributes(appUserId: appUserId, changes: changes, maxCount: maxCount, now: now)
    }
    func attributes(appUserId: String) async throws -> [CustomerAttribute]? { try await base.attributes(appUserId: appUserId) }
    func attributesNow(appUserId: String) throws -> ImmediateRead<[CustomerAttribute]?> { try base.attributesNow(appUserId: appUserId) }
}

extension CountingStore {
    func paywallVersion() async throws -> Int64 { try await base.paywallVersion() }
    func paywall() async throws -> PaywallSnapshot { try await base.paywall() }
    func paywallChanges(subject id: String, limit: Int) async throws -> [PaywallChangeRecord] {
        try await base.paywallChanges(subject: id, limit: limit)
    }
    func changePaywall(
        actor: String?, now: Int64, _ decide: @escaping @Sendable (PaywallSnapshot) throws -> [PaywallChange]
    ) async throws -> PaywallSnapshot {
        try await base.changePaywall(actor: actor, now: now, decide)
    }
}

extension CountingStore {
    func enrolments(appUserId: String) async throws -> [ExperimentEnrolment] { try await base.enrolments(appUserId: appUserId) }
    func enrol(appUserId: String, _ enrolment: ExperimentEnrolment, now: Int64) async throws -> (enrolment: ExperimentEnrolment, recorded: Bool)? {
        try await base.enrol(appUserId: appUserId, enrolment, now: now)
    }
    func enrolledCustomers(experimentId: String, afterCustomerId: Int64, limit: Int) async throws -> [EnrolledCustomer] {
        try await base.enrolledCustomers(experimentId: experimentId, afterCustomerId: afterCustomerId, limit: limit)
    }
}
