import Entitlements
import EntitledCrypto
import Foundation

/// The ledger's rules, written once against ``SQLSession`` and shared by both backends.
///
/// Write operations run inside a transaction (or savepoint) that the backend opened; they never
/// commit. On PostgreSQL, where several transactions run at once, they take locks so that the
/// outcome is the same as if they had run one after another:
/// - an advisory transaction lock per `originalTransactionId` and per `appAccountToken` around
///   every "who owns this?" decision, so a fact and a new link or customer can't miss each other;
/// - a row lock (`SELECT … FOR NO KEY UPDATE`: it serializes recomputations but, unlike
///   `FOR UPDATE`, does not conflict with the key-share locks foreign keys take when links and
///   projection rows referencing the customer are inserted, which deadlocked) on the customer before its facts are read for a
///   recomputation, so the last writer always projects from every committed fact.
/// Locks are taken in sorted order where possible; remaining deadlocks are retried by the backend.
/// On SQLite there is one writer, so the locks are skipped.
struct Ledger {
    let session: any SQLSession
    let fault: FaultInjector?
    /// Collects the transaction's projection changes for a ``LedgerObserver`` (nil: none asked).
    var tally: TallyBuffer? = nil

    private var isPostgres: Bool { session.dialect == .postgres }

    // MARK: Faults and locks

    func inject(_ point: FaultPoint) throws {
        guard let fault else { return }
        do {
            try fault(point)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.faultInjected, "fault injected at \(point.rawValue)", detail: "\(error)")
        }
    }

    /// Advisory locks for ownership decisions (PostgreSQL only), taken in sorted order by one
    /// statement (`unnest` keeps the array's order).
    func lockKeys(_ keys: some Sequence<String>) throws {
        guard isPostgres else { return }
        let sorted = Set(keys).sorted()
        guard !sorted.isEmpty else { return }
        try session.query(
            "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k", .text(Self.arrayLiteral(sorted)))
    }

    /// A PostgreSQL array literal of texts: `{"a","b"}`, with `\` and `"` escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        "{" + items.map { "\"" + $0.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"
    }

    /// Loads a customer, locking its row on PostgreSQL (`FOR NO KEY UPDATE`) so recomputations of one
    /// customer happen one after another, each seeing every committed fact.
    func lockedCustomer(_ id: Int64) throws -> CustomerRecord? {
        try session.query(isPostgres ? Self.customerForUpdateSQL : Self.customerByIDSQL, .int(id)).first.map(Self.decodeCustomer)
    }

    static func otidKey(_ otid: String) -> String { "otid:" + otid }
    static func tokenKey(_ token: String) -> String { "token:" + token }

    // MARK: Ingest

    func ingest(_ batch: IngestBatch, projector: any Projector, now: Int64) throws -> IngestResult {
        let message = batch.message
        let notificationID: Int64
        if let uuid = message.notificationUUID {
            let rows = try session.query(
                """
                INSERT INTO notifications (notification_uuid, source, received_at, outcome, notification_type, subtype, body)
                VALUES ($1, $2, $3, 'accepted', $4, $5, $6)
                ON CONFLICT (notification_uuid) DO NOTHING RETURNING id
                """,
                .text(uuid), .text(message.source.rawValue), .int(message.receivedAt),
                SQLValue(message.notificationType), SQLValue(message.subtype), .blob(message.body))
            guard let row = rows.first else { return IngestResult(status: .duplicate) }
            notificationID = try row.int(0)
        } else {
            let rows = try session.query(
                """
                INSERT INTO notifications (notification_uuid, source, received_at, outcome, notification_type, subtype, body)
                VALUES (NULL, $1, $2, 'accepted', $3, $4, $5) RETURNING id
                """,
                .text(message.source.rawValue), .int(message.receivedAt),
                SQLValue(message.notificationType), SQLValue(message.subtype), .blob(message.body))
            notificationID = try rows[0].int(0)
        }
        try inject(.afterNotificationInsert)

        var inserted = 0
        var replayed = 0
        var storedNotification = true
        var tokenForOTID: [String: String] = [:]
        var otids: Set<String> = []
        var looseTokens: Set<String> = []
        if !batch.facts.isEmpty {
            var parameters: [SQLValue] = []
            parameters.reserveCapacity(batch.facts.count * 12)
            for fact in batch.facts {
                parameters += [
                    .int(notificationID), .text(fact.kind.rawValue), .text(fact.jwsSHA256), .text(fact.jws),
                    .text(fact.payload), SQLValue(fact.transactionId), SQLValue(fact.originalTransactionId),
                    SQLValue(fact.appAccountToken.map(Self.normalizeToken)), SQLValue(fact.environment),
                    SQLValue(fact.bundleId), SQLValue(fact.signedDate), .int(now),
                ]
            }
            inserted = try session.query(Self.insertFactsSQL(count: batch.facts.count), parameters).count
            replayed = batch.facts.count - inserted
            // A message without a UUID (a client post) whose facts are all replays says nothing
            // new: its row would only grow the ledger with every repost of the same transaction.
            if inserted == 0 && message.notificationUUID == nil {
                try session.query("DELETE FROM notifications WHERE id = $1", .int(notificationID))
                storedNotification = false
            }
        }
        for fact in batch.facts {
            let token = fact.appAccountToken.map(Self.normalizeToken)
            if let otid = fact.originalTransactionId {
                otids.insert(otid)
                if let token { tokenForOTID[otid] = token }
            } else if let token {
                looseTokens.insert(token)
            }
        }
        try inject(.afterFacts)

        var affected: Set<Int64> = []
        var links: [LinkResult] = []
        let lockKeys = otids.map(Self.otidKey) + Set(tokenForOTID.values).union(looseTokens).map(Self.tokenKey)
        if let claim = batch.claim {
            try self.lockKeys(lockKeys)
            let customer = try ensureCustomerRow(appUserId: claim.appUserId, appAccountToken: nil, now: now, affected: &affected)
            for otid in otids.sorted() {
                links.append(try linkRow(customer: customer, otid: otid, behaviour: claim.behaviour, now: now, affected: &affected))
            }
        }
        // Locks, then for each subscription who owns it and who carries its token, and who carries
        // each loose token: one round trip.
        let sortedOTIDs = otids.sorted()
        let sortedTokens = looseTokens.sorted()
        var statements: [SQLStatement] = []
        let lockStatement = isPostgres && batch.claim == nil && !lockKeys.isEmpty
        if lockStatement {
            statements.append(
                SQLStatement(
                    "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k",
                    .text(Self.arrayLiteral(Set(lockKeys).sorted()))))
        }
        for otid in sortedOTIDs {
            statements.append(
                SQLStatement(
                    """
                    SELECT (SELECT customer_id FROM links WHERE original_transaction_id = $1),
                           (SELECT id FROM customers WHERE app_account_token = $2)
                    """, .text(otid), SQLValue(tokenForOTID[otid])))
        }
        for token in sortedTokens {
            statements.append(SQLStatement("SELECT id FROM customers WHERE app_account_token = $1", .text(token)))
        }
        var results = try session.pipeline(statements)[...]
        if lockStatement { results = results.dropFirst() }
        for otid in sortedOTIDs {
            let row = results.removeFirst()[0]
            if let owner = try row.optionalInt(0) {
                affected.insert(owner)
            } else if let customerID = try row.optionalInt(1) {
                try insertLink(otid: otid, customerID: customerID, now: now, via: "appAccountToken")
                affected.insert(customerID)
            }
        }
        for _ in sortedTokens {
            if let id = try results.removeFirst().first?.int(0) { affected.insert(id) }
        }
        try inject(.afterLinks)

        var names: [String] = []
        var failures: [ProjectionFailure] = []
        for id in affected.sorted() {
            let (customer, failure) = try recompute(customerID: id, projector: projector, now: now)
            names.append(customer.appUserId)
            if let failure { failures.append(failure) }
        }
        try inject(.afterProjections)
        return IngestResult(
            status: .applied, notificationID: storedNotification ? notificationID : nil, insertedFacts: inserted, replayedFacts: replayed,
            affectedCustomers: names.sorted(), links: links, failedCustomers: failures)
    }

    /// Stores a rejected message's first ``ReceivedMessage/maxRejectedBodyBytes`` bytes, with the
    /// SHA-256 and size of the whole body: enough to audit it, while forged bodies cannot fill the
    /// disk. `body_sha256` and `body_size` are set on rejected rows only.
    func recordRejected(_ message: ReceivedMessage, code: String) throws -> Int64 {
        let rows = try session.query(
            """
            INSERT INTO notifications (notification_uuid, claimed_uuid, source, received_at, outcome, reject_code,
                                       notification_type, subtype, body, body_sha256, body_size)
            VALUES (NULL, $1, $2, $3, 'rejected', $4, $5, $6, $7, $8, $9) RETURNING id
            """,
            SQLValue(message.notificationUUID.map { String($0.prefix(256)) }), .text(message.source.rawValue),
            .int(message.receivedAt), .text(String(code.prefix(64))),
            SQLValue(message.notificationType.map { String($0.prefix(64)) }), SQLValue(message.subtype.map { String($0.prefix(64)) }),
            .blob(Array(message.body.prefix(ReceivedMessage.maxRejectedBodyBytes))),
            .text(Hex.encode(SHA256.hash(message.body))), .int(Int64(message.body.count)))
        return try rows[0].int(0)
    }

    /// Deletes up to `limit` rejected messages received before `cutoff`; returns how many.
    func purgeRejected(receivedBefore cutoff: Int64, limit: Int) throws -> Int {
        try session.query(
            """
            DELETE FROM notifications WHERE id IN (
                SELECT id FROM notifications WHERE outcome = 'rejected' AND received_at < $1 ORDER BY id LIMIT $2)
            RETURNING id
            """, .int(cutoff), .int(Int64(limit))
        ).count
    }

    static func normalizeToken(_ token: String) -> String { token.lowercased() }

    // MARK: Customers and links

    static let customerColumns = "id, app_user_id, app_account_token, created_at"
    static let customerByIDSQL = "SELECT \(customerColumns) FROM customers WHERE id = $1"
    static let customerForUpdateSQL = "SELECT \(customerColumns) FROM customers WHERE id = $1 FOR NO KEY UPDATE"

    /// A multi-row fact insert (one round trip for a notification's facts); returns the ids of
    /// the facts that were new.
    static func insertFactsSQL(count: Int) -> String {
        count <= commonFactInserts.count ? commonFactInserts[count - 1] : makeInsertFactsSQL(count: count)
    }

    /// The statements for 1…4 facts, built once (a notification usually carries one to three).
    private static let commonFactInserts = (1...4).map { makeInsertFactsSQL(count: $0) }

    private static func makeInsertFactsSQL(count: Int) -> String {
        let rows = (0..<count).map { row in
            "(" + (1...12).map { "$\(row * 12 + $0)" }.joined(separator: ", ") + ")"
        }
        return """
            INSERT INTO facts (notification_id, kind, jws_sha256, jws, payload, transaction_id, original_transaction_id,
                               app_account_token, environment, bundle_id, signed_date, received_at)
            VALUES \(rows.joined(separator: ", "))
            ON CONFLICT (kind, jws_sha256) DO NOTHING RETURNING id
            """
    }

    static func decodeCustomer(_ row: SQLRow) throws -> CustomerRecord {
        CustomerRecord(id: try row.int(0), appUserId: try row.text(1), appAccountToken: try row.text(2), createdAt: try row.int(3))
    }

    func customer(appUserId: String) throws -> CustomerRecord? {
        try session.query("SELECT \(Self.customerColumns) FROM customers WHERE app_user_id = $1", .text(appUserId))
            .first.map(Self.decodeCustomer)
    }

    func customer(id: Int64) throws -> CustomerRecord? {
        try session.query(Self.customerByIDSQL, .int(id)).first.map(Self.decodeCustomer)
    }

    func customer(token: String) throws -> CustomerRecord? {
        try session.query("SELECT \(Self.customerColumns) FROM customers WHERE app_account_token = $1", .text(token))
            .first.map(Self.decodeCustomer)
    }

    func owner(of otid: String) throws -> CustomerRecord? {
        try session.query(
            """
            SELECT c.id, c.app_user_id, c.app_account_token, c.created_at
            FROM links l JOIN customers c ON c.id = l.customer_id WHERE l.original_transaction_id = $1
            """, .text(otid)
        ).first.map(Self.decodeCustomer)
    }

    func insertLink(otid: String, customerID: Int64, now: Int64, via: String) throws {
        try session.query(
            """
            INSERT INTO links (original_transaction_id, customer_id, linked_at, via) VALUES ($1, $2, $3, $4)
            ON CONFLICT (original_transaction_id) DO NOTHING
            """, .text(otid), .int(customerID), .int(now), .text(via))
    }

    /// Returns the customer, creating it (and linking facts that already carry its token) when missing.
    func ensureCustomerRow(
        appUserId: String, appAccountToken: String?, now: Int64, affected: inout Set<Int64>
    ) throws -> CustomerRecord {
        if let existing = try customer(appUserId: appUserId) { return existing }
        guard !appUserId.isEmpty, appUserId.utf8.count <= 512 else {
            throw StorageError(.invalidArgument, "appUserId must be 1–512 bytes")
        }
        let token = Self.normalizeToken(appAccountToken ?? UUID().uuidString)
        guard UUID(uuidString: token) != nil else { throw StorageError(.invalidArgument, "appAccountToken must be a UUID") }
        try lockKeys([Self.tokenKey(token)])
        let rows = try session.query(
            """
            INSERT INTO customers (app_user_id, app_account_token, created_at) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING \(Self.customerColumns)
            """, .text(appUserId), .text(token), .int(now))
        guard let row = rows.first else {
            // Created concurrently (same appUserId), or the token belongs to someone else.
            if let existing = try customer(appUserId: appUserId) { return existing }
            throw StorageError(.constraint, "appAccountToken already belongs to another customer")
        }
        let created = try Self.decodeCustomer(row)
        // Facts that arrived before the customer existed: link their subscriptions now.
        let orphans = try session.query(
            """
            SELECT DISTINCT original_transaction_id FROM facts
            WHERE app_account_token = $1 AND original_transaction_id IS NOT NULL
            """, .text(token)
        ).map { try $0.text(0) }
        try lockKeys(orphans.map(Self.otidKey))
        for otid in orphans.sorted() where try owner(of: otid) == nil {
            try insertLink(otid: otid, customerID: created.id, now: now, via: "appAccountToken")
        }
        affected.insert(created.id)
        return created
    }

    func linkRow(
        customer: CustomerRecord, otid: String, behaviour: RestoreBehavior, now: Int64, affected: inout Set<Int64>
    ) throws -> LinkResult {
        try lockKeys([Self.otidKey(otid)])
        guard let current = try owner(of: otid) else {
            try insertLink(otid: otid, customerID: customer.id, now: now, via: "claim")
            affected.insert(customer.id)
            return LinkResult(originalTransactionId: otid, outcome: .linked)
        }
        if current.id == customer.id {
            affected.insert(customer.id)
            return LinkResult(originalTransactionId: otid, outcome: .alreadyLinked)
        }
        switch behaviour {
        case .keep:
            return LinkResult(originalTransactionId: otid, outcome: .kept(owner: current.appUserId))
        case .transfer:
            try session.query(
                "UPDATE links SET customer_id = $1, linked_at = $2, via = 'transfer' WHERE original_transaction_id = $3",
                .int(customer.id), .int(now), .text(otid))
            affected.insert(customer.id)
            affected.insert(current.id)
            return LinkResult(originalTransactionId: otid, outcome: .transferred(from: current.appUserId))
        }
    }

    func ensureCustomer(appUserId: String, appAccountToken: String?, projector: any Projector, now: Int64) throws -> CustomerRecord {
        var affected: Set<Int64> = []
        let customer = try ensureCustomerRow(appUserId: appUserId, appAccountToken: appAccountToken, now: now, affected: &affected)
        for id in affected.sorted() { try recompute(customerID: id, projector: projector, now: now) }
        if !affected.isEmpty { try inject(.afterProjections) }
        return customer
    }

    // MARK: Projections

    static func factColumns(jws: Bool) -> String {
        """
        f.id, f.notification_id, f.received_at, f.kind, \(jws ? "f.jws" : "''"), f.payload, f.transaction_id,
        f.original_transaction_id, f.app_account_token, f.environment, f.bundle_id, f.signed_date, f.jws_sha256
        """
    }

    static func factsSQL(jws: Bool) -> String {
        """
        SELECT * FROM (
            SELECT \(factColumns(jws: jws)) FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
            WHERE l.customer_id = $1
            UNION ALL
            SELECT \(factColumns(jws: jws)) FROM facts f
            WHERE f.original_transaction_id IS NULL
              AND f.app_account_token = (SELECT app_account_token FROM customers WHERE id = $1)
        ) AS cf ORDER BY COALESCE(signed_date, 0), id
        """
    }

    static let factsWithJWS = factsSQL(jws: true)
    static let factsWithoutJWS = factsSQL(jws: false)

    /// A customer's facts: those of every linked subscription, plus those without a subscription
    /// that carry the customer's token. Without `jws`, the signed text is left empty (projectors
    /// work on decoded payloads, and the text is most of a fact's bytes).
    func facts(of customer: CustomerRecord, jws: Bool = true) throws -> [StoredFact] {
        try Self.decodeFacts(try session.query(jws ? Self.factsWithJWS : Self.factsWithoutJWS, .int(customer.id)))
    }

    static func decodeFacts(_ rows: [SQLRow]) throws -> [StoredFact] {
        try rows.map { row in
            StoredFact(
                id: try row.int(0), notificationID: try row.optionalInt(1), receivedAt: try row.int(2),
                fact: IncomingFact(
                    kind: FactKind(rawValue: try row.text(3)), jws: try row.text(4), jwsSHA256: try row.text(12),
                    payload: try row.text(5),
                    transactionId: try row.optionalText(6), originalTransactionId: try row.optionalText(7),
                    appAccountToken: try row.optionalText(8), environment: try row.optionalText(9),
                    bundleId: try row.optionalText(10), signedDate: try row.optionalInt(11)))
        }
    }

    /// Recomputes and stores one customer's projection. Returns the customer and, when the
    /// projector failed for it, the failure (then marked on the customer's stored projection
    /// instead: one customer that cannot be projected must not fail everyone's transaction).
    @discardableResult
    func recompute(customerID: Int64, projector: any Projector, now: Int64) throws -> (CustomerRecord, ProjectionFailure?) {
        // Lock (PostgreSQL) and load the customer, its facts and its stored projection: one round trip.
        let results = try session.pipeline([
            SQLStatement(isPostgres ? Self.customerForUpdateSQL : Self.customerByIDSQL, .int(customerID)),
            SQLStatement(Self.factsWithoutJWS, .int(customerID)),
            SQLStatement(Self.stateByIDSQL, .int(customerID)),
        ])
        guard let customer = try results[0].first.map(Self.decodeCustomer) else {
            throw StorageError(.notFound, "customer not found", detail: "id \(customerID)")
        }
        let facts = try Self.decodeFacts(results[1])
        let stored = try results[2].first.map(Self.decodeState)
        let projection: CustomerProjection
        do {
            projection = try projector.project(customer: customer, facts: facts, now: now).canonical
        } catch {
            let failure = ProjectionFailure(appUserId: customer.appUserId, reason: String(describing: error))
            try markFailed(customer, failure: failure, kept: stored?.projection, now: now)
            return (customer, failure)
        }
        // A failure mark is only cleared by rewriting every row (the rows kept may be stale).
        try write(projection, for: customer, now: now, previous: stored?.failure == nil ? stored?.projection : nil)
        noteProjection(stored?.projection, projection)
        return (customer, nil)
    }

    /// Stores a projection: the state row (document + encoded rows, the hot read) and the indexed
    /// row tables. Only rows that differ from `previous` are written; without `previous` every
    /// row of the customer is replaced.
    func write(_ projection: CustomerProjection, for customer: CustomerRecord, now: Int64, previous: CustomerProjection?) throws {
        typealias EntitlementKey = String
        func key(_ row: EntitlementRow) -> EntitlementKey { row.entitlement + "\u{0}" + row.environment }
        let oldEntitlements = Dictionary((previous?.entitlements ?? []).map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })
        let oldSubscriptions = Dictionary((previous?.subscriptions ?? []).map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        // Every write below goes in one pipeline (one round trip on PostgreSQL).
        var statements: [SQLStatement] = []
        if previous == nil {
            statements.append(SQLStatement("DELETE FROM entitlement_projections WHERE customer_id = $1", .int(customer.id)))
            statements.append(SQLStatement("DELETE FROM subscription_projections WHERE customer_id = $1", .int(customer.id)))
        }
        let newEntitlementKeys = Set(projection.entitlements.map(key))
        for (entitlementKey, row) in oldEntitlements where !newEntitlementKeys.contains(entitlementKey) {
            statements.append(SQLStatement(
                "DELETE FROM entitlement_projections WHERE customer_id = $1 AND entitlement = $2 AND environment = $3",
                .int(customer.id), .text(row.entitlement), .text(row.environment)))
        }
        for row in projection.entitlements where oldEntitlements[key(row)] != row {
            statements.append(SQLStatement(
                """
                INSERT INTO entitlement_projections (customer_id, entitlement, environment, status, active, product_id,
                    original_transaction_id, expires_at, grace_until, will_renew)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                ON CONFLICT (customer_id, entitlement, environment) DO UPDATE SET status = excluded.status,
                    active = excluded.active, product_id = excluded.product_id,
                    original_transaction_id = excluded.original_transaction_id, expires_at = excluded.expires_at,
                    grace_until = excluded.grace_until, will_renew = excluded.will_renew
                """,
                .int(customer.id), .text(row.entitlement), .text(row.environment), .text(row.status), SQLValue(row.active),
                SQLValue(row.productId), SQLValue(row.originalTransactionId), SQLValue(row.expiresAt),
                SQLValue(row.graceUntil), SQLValue(row.willRenew)))
        }
        let newOTIDs = Set(projection.subscriptions.map(\.originalTransactionId))
        for otid in oldSubscriptions.keys where !newOTIDs.contains(otid) {
            // Only if still ours: after a transfer the new owner may already have taken the row.
            statements.append(SQLStatement(
                "DELETE FROM subscription_projections WHERE original_transaction_id = $1 AND customer_id = $2",
                .text(otid), .int(customer.id)))
        }
        for row in projection.subscriptions where oldSubscriptions[row.originalTransactionId] != row {
            statements.append(SQLStatement(
                """
                INSERT INTO subscription_projections (original_transaction_id, customer_id, product_id, group_id, status,
                    expires_at, grace_until, auto_renew, environment)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                ON CONFLICT (original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id,
                    product_id = excluded.product_id, group_id = excluded.group_id, status = excluded.status,
                    expires_at = excluded.expires_at, grace_until = excluded.grace_until,
                    auto_renew = excluded.auto_renew, environment = excluded.environment
                """,
                .text(row.originalTransactionId), .int(customer.id), .text(row.productId), SQLValue(row.group),
                .text(row.status), SQLValue(row.expiresAt), SQLValue(row.graceUntil), SQLValue(row.autoRenew),
                .text(row.environment)))
        }
        statements.append(SQLStatement(
            """
            INSERT INTO customer_states (app_user_id, customer_id, app_account_token, created_at, state, projection_rows,
                                         computed_at, projection_error)
            VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)
            ON CONFLICT (app_user_id) DO UPDATE SET state = excluded.state, projection_rows = excluded.projection_rows,
                computed_at = excluded.computed_at, projection_error = NULL
            """,
            .text(customer.appUserId), .int(customer.id), .text(customer.appAccountToken), .int(customer.createdAt),
            .text(String(decoding: projection.state, as: UTF8.self)), .text(RowCodec.encode(projection)), .int(now)))
        _ = try session.pipeline(statements)
    }

    static let stateColumns =
        "customer_id, app_user_id, app_account_token, created_at, state, projection_rows, computed_at, projection_error"
    static let stateByUserSQL = "SELECT \(stateColumns) FROM customer_states WHERE app_user_id = $1"
    static let stateByIDSQL = "SELECT \(stateColumns) FROM customer_states WHERE customer_id = $1"

    static func decodeState(_ row: SQLRow) throws -> StoredProjection {
        let projection = try RowCodec.decode(try row.text(5), state: Array(try row.text(4).utf8))
        return StoredProjection(
            customer: try decodeCustomer(row), projection: projection, computedAt: try row.int(6), failure: try row.optionalText(7))
    }

    /// The hot read: one primary-key lookup of one row.
    func projection(appUserId: String) throws -> StoredProjection? {
        try session.query(Self.stateByUserSQL, .text(appUserId)).first.map(Self.decodeState)
    }

    static let documentByUserSQL = """
        SELECT customer_id, app_user_id, app_account_token, created_at, state, computed_at, projection_error
        FROM customer_states WHERE app_user_id = $1
        """

    /// The hot read without the projection rows (their decoding is wasted on a served document).
    func state(appUserId: String) throws -> StoredState? {
        try session.query(Self.documentByUserSQL, .text(appUserId)).first.map { row in
            StoredState(
                customer: try Self.decodeCustomer(row), state: Array(try row.text(4).utf8), computedAt: try row.int(5),
                failure: try row.optionalText(6))
        }
    }

    func storedState(customerID: Int64) throws -> StoredProjection? {
        try session.query(Self.stateByIDSQL, .int(customerID)).first.map(Self.decodeState)
    }

    /// The projection as the indexed row tables hold it (what `subscription` reads).
    func tableRows(customerID: Int64) throws -> CustomerProjection {
        var projection = CustomerProjection(entitlements: [], subscriptions: [], state: [])
        for row in try session.query(
            """
            SELECT entitlement, status, active, product_id, original_transaction_id, expires_at, grace_until, will_renew,
                   environment
            FROM entitlement_projections WHERE customer_id = $1
            """, .int(customerID))
        {
            projection.entitlements.append(
                EntitlementRow(
                    entitlement: try row.text(0), status: try row.text(1), active: try row.bool(2), productId: try row.optionalText(3),
                    originalTransactionId: try row.optionalText(4), expiresAt: try row.optionalInt(5),
                    graceUntil: try row.optionalInt(6), willRenew: try row.bool(7), environment: try row.text(8)))
        }
        for row in try session.query(
            """
            SELECT original_transaction_id, product_id, group_id, status, expires_at, grace_until, auto_renew, environment
            FROM subscription_projections WHERE customer_id = $1
            """, .int(customerID))
        {
            projection.subscriptions.append(
                SubscriptionRow(
                    originalTransactionId: try row.text(0), productId: try row.text(1), group: try row.optionalText(2),
                    status: try row.text(3), expiresAt: try row.optionalInt(4), graceUntil: try row.optionalInt(5),
                    autoRenew: try row.bool(6), environment: try row.text(7)))
        }
        return projection.canonical
    }
}
