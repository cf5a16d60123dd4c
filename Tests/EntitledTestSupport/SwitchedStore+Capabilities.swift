import Entitlements
@testable import Storage

/// The rest of the store's capabilities behind ``TestLedger``'s switches.
extension SwitchedStore {
    func enqueueJob(
        kind: String, key: String, bundleId: String, subject: String, subjectTime: Int64?, now: Int64,
        unlessFactsOf originalTransactionId: String?
    ) async throws -> Bool {
        try up()
        return try await base.enqueueJob(
            kind: kind, key: key, bundleId: bundleId, subject: subject, subjectTime: subjectTime, now: now, unlessFactsOf: originalTransactionId)
    }
    func claimJob(owner: String, now: Int64, leaseUntil: Int64) async throws -> DurableJob? {
        try up()
        return try await base.claimJob(owner: owner, now: now, leaseUntil: leaseUntil)
    }
    func finishJob(_ id: Int64, owner: String, outcome: DurableJobOutcome, now: Int64) async throws -> Bool {
        try up()
        return try await base.finishJob(id, owner: owner, outcome: outcome, now: now)
    }
    func jobs(status: DurableJobStatus?, limit: Int) async throws -> [DurableJob] {
        try up()
        return try await base.jobs(status: status, limit: limit)
    }
    func unfinishedJobCount(kind: String, subjectTimes: Range<Int64>) async throws -> Int {
        try up()
        return try await base.unfinishedJobCount(kind: kind, subjectTimes: subjectTimes)
    }

    func recordConsent(appUserId: String, consented: Bool, now: Int64) async throws {
        try up()
        try await base.recordConsent(appUserId: appUserId, consented: consented, now: now)
    }
    func consent(appUserId: String) async throws -> Bool? {
        try up()
        return try await base.consent(appUserId: appUserId)
    }
    func playOrder(packageName: String, orderId: String) async throws -> PlayOrder? {
        try up()
        return try await base.playOrder(packageName: packageName, orderId: orderId)
    }
    func recordRefundReview(_ review: StoredRefundReview) async throws {
        try up()
        try await base.recordRefundReview(review)
    }
    func refundReviews(orderId: String) async throws -> [StoredRefundReview] {
        try up()
        return try await base.refundReviews(orderId: orderId)
    }
    func refundReviews(answered: Bool, since: Int64, limit: Int) async throws -> [StoredRefundReview] {
        try up()
        return try await base.refundReviews(answered: answered, since: since, limit: limit)
    }
    func answerRefundReview(_ review: StoredRefundReview, answer: String, answeredBy: String, now: Int64) async throws
        -> (review: StoredRefundReview, recorded: Bool) {
        try up()
        return try await base.answerRefundReview(review, answer: answer, answeredBy: answeredBy, now: now)
    }
    func refundReviewForwarded(packageName: String, pendingRefundToken: String, now: Int64) async throws {
        try up()
        try await base.refundReviewForwarded(packageName: packageName, pendingRefundToken: pendingRefundToken, now: now)
    }

    func releaseEventHolds(projector: Projector, now: Int64, limit: Int) async throws -> Int {
        try up()
        return try await base.releaseEventHolds(projector: projector, now: now, limit: limit)
    }
    func nextEventHoldRelease() async throws -> Int64? {
        try up()
        return try await base.nextEventHoldRelease()
    }

    func playPurchaseTokens(packageName: String, after: String, limit: Int) async throws -> [String] {
        try up()
        return try await base.playPurchaseTokens(packageName: packageName, after: after, limit: limit)
    }
    func playFacts(purchaseToken: String, projector: Projector) async throws -> [Fact] {
        try up()
        return try await base.playFacts(purchaseToken: purchaseToken, projector: projector)
    }
    func acquireReconcileLease(_ key: ReconcileKey, owner: String, now: Int64, expiresAt: Int64) async throws -> ReconcileLease {
        try up()
        return try await base.acquireReconcileLease(key, owner: owner, now: now, expiresAt: expiresAt)
    }
    func advanceReconcileWatermark(_ key: ReconcileKey, owner: String, to watermark: Int64, now: Int64) async throws -> Bool {
        try up()
        return try await base.advanceReconcileWatermark(key, owner: owner, to: watermark, now: now)
    }
    func releaseReconcileLease(_ key: ReconcileKey, owner: String) async throws {
        try up()
        try await base.releaseReconcileLease(key, owner: owner)
    }

    func signedFacts(after afterID: Int64, limit: Int) async throws -> [SignedFactText] {
        try up()
        return try await base.signedFacts(after: afterID, limit: limit)
    }
    func notificationBody(id: Int64) async throws -> [UInt8]? {
        try up()
        return try await base.notificationBody(id: id)
    }

    func backfillPlaceholders(projector: Projector, now: Int64, limit: Int) async throws -> (created: Int, more: Bool) {
        try up()
        return try await base.backfillPlaceholders(projector: projector, now: now, limit: limit)
    }

    func claimExport(_ name: String, owner: String, now: Int64, leaseUntil: Int64, through: Int64) async throws -> ExportClaim? {
        try up()
        return try await base.claimExport(name, owner: owner, now: now, leaseUntil: leaseUntil, through: through)
    }
    func renewExportLease(_ name: String, owner: String, now: Int64, leaseUntil: Int64) async throws -> Bool {
        try up()
        return try await base.renewExportLease(name, owner: owner, now: now, leaseUntil: leaseUntil)
    }
    func finishExport(_ name: String, owner: String, outcome: ExportOutcome, now: Int64) async throws -> Bool {
        try up()
        return try await base.finishExport(name, owner: owner, outcome: outcome, now: now)
    }
    func exportStatuses(now: Int64) async throws -> [ExportStatus] {
        try up()
        return try await base.exportStatuses(now: now)
    }
    func exportCustomers(_ window: ExportWindow, afterID: Int64, limit: Int) async throws -> [ExportedCustomer] {
        try up()
        return try await base.exportCustomers(window, afterID: afterID, limit: limit)
    }
    func exportSubscriptions(_ window: ExportWindow, after: String, limit: Int) async throws -> [ExportedSubscription] {
        try up()
        return try await base.exportSubscriptions(window, after: after, limit: limit)
    }
    func exportTransactions(_ window: ExportWindow, afterID: Int64, limit: Int, projector: Projector) async throws -> [ExportedTransaction] {
        try up()
        return try await base.exportTransactions(window, afterID: afterID, limit: limit, projector: projector)
    }
    func exportEvents(_ window: ExportWindow, afterSequence: Int64, limit: Int) async throws -> [OutboxEvent] {
        try up()
        return try await base.exportEvents(window, afterSequence: afterSequence, limit: limit)
    }
}

extension SwitchedStore: CustomerAttributeStore {
    func setAttributes(appUserId: String, changes: [String: String?], maxCount: Int, now: Int64) async throws -> AttributeWrite {
        try up()
        return try await base.setAttributes(appUserId: appUserId, changes: changes, maxCount: maxCount, now: now)
    }
    func attributes(appUserId: String) async throws -> [CustomerAttribute]? {
        try up()
        return try await base.attributes(appUserId: appUserId)
    }
}

extension SwitchedStore: OfferingStore {
    func paywallVersion() async throws -> Int64 {
        try up()
        return try await base.paywallVersion()
    }
    func paywall() async throws -> PaywallSnapshot {
        try up()
        return try await base.paywall()
    }
    func paywallChanges(subject id: String, limit: Int) async throws -> [PaywallChangeRecord] {
        try up()
        return try await base.paywallChanges(subject: id, limit: limit)
    }
    func changePaywall(
        actor: String?, now: Int64, _ decide: @escaping @Sendable (PaywallSnapshot) throws -> [PaywallChange]
    ) async throws -> PaywallSnapshot {
        try up()
        return try await base.changePaywall(actor: actor, now: now, decide)
    }
}

extension SwitchedStore: ExperimentStore {
    func enrolments(appUserId: String) async throws -> [ExperimentEnrolment] {
        try up()
        return try await base.enrolments(appUserId: appUserId)
    }
    func enrol(appUserId: String, _ enrolment: ExperimentEnrolment, now: Int64) async throws -> (enrolment: ExperimentEnrolment, recorded: Bool)? {
        try up()
        return try await base.enrol(appUserId: appUserId, enrolment, now: now)
    }
    func enrolledCustomers(experimentId: String, afterCustomerId: Int64, limit: Int) async throws -> [EnrolledCustomer] {
        try up()
        return try await base.enrolledCustomers(experimentId: experimentId, afterCustomerId: afterCustomerId, limit: limit)
    }
}
