import Entitlements
import EntitledCrypto
import Foundation

/// The ledger's rules, written once against ``SQLSession`` and shared by both backends.
///
/// Write operations run inside a transaction (or savepoint) that the backend opened; they never
/// commit. On PostgreSQL, where several transactions run at once, they take locks so that the
/// outcome is the same as if they had run one after another:
/// - an advisory transaction lock per `originalTransactionId` and per `appAccountToken` (in this
///   schema) around every "who owns this?" decision, so a fact and a new link or customer can't
///   miss each other;
/// - a row lock (`SELECT … FOR NO KEY UPDATE`: it serializes recomputations but, unlike
///   `FOR UPDATE`, does not conflict with the key-share locks foreign keys take when links and
///   projection rows referencing the customer are inserted, which deadlocked) on the customer before its facts are read for a
///   recomputation, so the last writer always projects from every committed fact.
/// Locks are taken in sorted order where possible; remaining deadlocks are retried by the backend.
/// Rows and locks every transaction shares (rollups, ingest counters, the outbox) are not taken
/// here: they are noted in the session's ``TransactionTail`` and taken at the commit, in one
/// global order.
/// On SQLite there is one writer, so the locks are skipped.
struct Ledger {
    let session: any SQLSession
    let fault: FaultInjector?
    /// Collects the transaction's projection changes for a ``LedgerObserver`` (nil: none asked).
    var tally: TallyBuffer? = nil

    var isPostgres: Bool { session.dialect == .postgres }

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
        guard isPostgres, let statement = Self.lockingKeys(keys) else { return }
        try session.query(statement)
    }

    /// The statement locking each of `keys` (a subscription's or a token's) for the transaction,
    /// once each and in sorted order; nil for no keys. A key's lock is scoped to the schema:
    /// ledgers in other schemas of the cluster (another deployment, another test) hold the same
    /// ids without waiting on each other.
    static func lockingKeys(_ keys: some Sequence<String>) -> SQLQuery? {
        let sorted = Set(keys).sorted()
        guard !sorted.isEmpty else { return nil }
        return "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || k, 0)) FROM unnest(\(arrayLiteral(sorted))::text[]) AS k"
    }

    /// A PostgreSQL array literal of texts: `{"a","b"}`, with `\` and `"` escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        "{" + items.map { "\"" + $0.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"
    }

    /// Loads a customer, locking its row on PostgreSQL (`FOR NO KEY UPDATE`) so recomputations of one
    /// customer happen one after another, each seeing every committed fact.
    func lockedCustomer(_ id: Int64) throws -> CustomerRecord? {
        try session.query(isPostgres ? Self.customerForUpdate(id: id) : Self.customer(id: id)).first.map(Self.decodeCustomer)
    }

    static func otidKey(_ otid: String) -> String { "otid:" + otid }
    static func tokenKey(_ token: String) -> String { "token:" + token }

    // MARK: Ingest

    /// Stores a message and its facts (made into rows on the caller's thread), links and projects;
    /// see ``LedgerStore/ingest(_:facts:claim:projector:now:)``.
    func ingest(
        _ message: ReceivedMessage, rows: [FactRow], packed: PackedMessage, claim: Claim?, projector: Projector,
        now: Int64
    ) throws -> IngestResult {
        var rows = rows
        let notificationID: Int64
        // A body that is its facts' signed text and a little JSON is stored as references to them
        // (see `SignedPart`); a reference needs no header id.
        let body: [UInt8] = packed.body == nil ? message.body : []
        let own = Self.ownReferences(rows)
        let bodyPacked = try packed.body.map { try SignedTextPacker.encode($0, headerIDs: [:], literalsWithFact: false, own: own) }
        let insert = Self.insertNotification(message, body: body, bodyPacked: bodyPacked)
        if message.notificationUUID != nil {
            guard let id = try session.value(insert, as: Int64.self) else { return IngestResult(status: .duplicate) }
            notificationID = id
        } else {
            notificationID = try session.value(insert, as: Int64.self) ?? 0
        }
        try inject(.afterNotificationInsert)

        var affected: Set<Int64> = []
        // Facts without a subscription (an app transaction) that come with a claim belong to the
        // claiming customer through their token, whichever arrives first.
        if let claim, rows.contains(where: { if case .appTransaction = $0.fact { true } else { false } }) {
            let customer = try ensureCustomerRow(appUserId: claim.appUserId, appAccountToken: nil, now: now, affected: &affected)
            for index in rows.indices {
                if case .appTransaction = rows[index].fact { rows[index].appAccountToken = customer.appAccountToken }
            }
        }

        var inserted = 0
        var replayed = 0
        var storedNotification = true
        var tokenForOTID: [String: String] = [:]
        var otids: Set<String> = []
        var looseTokens: Set<String> = []
        if !rows.isEmpty {
            let headerIDs = try internHeaders(packed.headers)
            var tuples: [SQLQuery] = []
            tuples.reserveCapacity(rows.count)
            for row in rows {
                // Only the structure is assembled here (it needs the header ids): the JSON was
                // compressed on the caller's thread.
                let signed = try row.packed.map { try SignedTextPacker.encode($0, headerIDs: headerIDs, literalsWithFact: row.literalsWithFact, own: own) }
                tuples.append(
                    try Self.factValues(
                        row, notificationID: notificationID, signed: signed == nil ? row.signed : "", signedPacked: signed,
                        appAccountToken: row.appAccountToken.map(Self.normalizeToken), environment: row.fact.environment.rawValue,
                        bundleId: message.bundleId, receivedAt: now, dialect: session.dialect))
            }
            let stored = try session.query(Self.insertFacts(tuples, dialect: session.dialect))
            try recordPlayOrders(rows, packageName: message.bundleId)
            inserted = stored.count
            replayed = rows.count - inserted
            if replayed > 0 {
                try keepSignatures(stored: stored, own: own, rows: rows, headerIDs: headerIDs, body: packed.body, notificationID: notificationID)
            }
            // A message without a UUID (a client post) whose facts are all replays says nothing
            // new: its row would only grow the ledger with every repost of the same transaction.
            if inserted == 0 && message.notificationUUID == nil {
                try session.query("DELETE FROM notifications WHERE id = \(notificationID)")
                storedNotification = false
            }
        }
        for row in rows {
            let token = row.appAccountToken.map(Self.normalizeToken)
            if let otid = row.originalTransactionId {
                otids.insert(otid)
                if let token { tokenForOTID[otid] = token }
            } else if let token {
                looseTokens.insert(token)
            }
        }
        try inject(.afterFacts)

        var links: [LinkResult] = []
        let lockKeys = otids.map(Self.otidKey) + Set(tokenForOTID.values).union(looseTokens).map(Self.tokenKey)
        if let claim {
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
        var statements: [SQLQuery] = []
        let lockStatement = isPostgres && claim == nil ? Self.lockingKeys(lockKeys) : nil
        if let lockStatement { statements.append(lockStatement) }
        for otid in sortedOTIDs {
            statements.append(
                (
                    """
                    SELECT (SELECT \(Self.rootOf("c")) FROM links l JOIN customers c ON c.id = l.customer_id
                            WHERE l.original_transaction_id = \(otid)) AS owner,
                           (SELECT \(Self.rootOf("c")) FROM customers c WHERE c.app_account_token = \(tokenForOTID[otid])) AS token_owner
                    """ as SQLQuery))
        }
        for token in sortedTokens {
            statements.append(
                ("SELECT \(Self.rootOf("c")) FROM customers c WHERE c.app_account_token = \(token)" as SQLQuery))
        }
        var results = try session.pipeline(statements)[...]
        if lockStatement != nil { results = results.dropFirst() }
        // A subscription newly linked may bring facts that came before this message (unlinked, a
        // family member's app posting it after Apple's notifications): the customer's events are
        // then derived from the earliest of them.
        var linkedNow = links.compactMap { if case .linked = $0.outcome { $0.originalTransactionId } else { nil } }
        for otid in sortedOTIDs {
            let row = try results.removeFirst()[0].decode(SubscriptionOwners.self)
            let tokenOwner = row.tokenOwner
            if let owner = row.owner {
                affected.insert(owner)
                // A token that names a customer claims the subscription from its placeholder.
                if let tokenOwner, tokenOwner != owner, try customer(id: owner)?.isUnlinked == true {
                    try moveLink(otid: otid, to: tokenOwner, now: now, via: "appAccountToken")
                    affected.insert(tokenOwner)
                    linkedNow.append(otid)
                }
            } else if let tokenOwner {
                try insertLink(otid: otid, customerID: tokenOwner, now: now, via: "appAccountToken")
                affected.insert(tokenOwner)
                linkedNow.append(otid)
            } else if tokenForOTID[otid] == nil, try placeholderMayHold(otid) {
                let placeholder = try ensureCustomerRow(
                    appUserId: UnlinkedSubscription.key(otid), appAccountToken: nil, now: now, affected: &affected)
                try insertLink(otid: otid, customerID: placeholder.id, now: now, via: "unlinked")
                linkedNow.append(otid)
            }
        }
        var earliestSignedDate = rows.map(\.signedDate).min() ?? .max
        if !linkedNow.isEmpty {
            let earliest = try session.pipeline(
                linkedNow.map {
                    ("SELECT MIN(COALESCE(signed_date, 0)) FROM facts WHERE original_transaction_id = \($0)" as SQLQuery)
                })
            for result in earliest {
                if let date = try result.first?.single(Int64?.self) { earliestSignedDate = min(earliestSignedDate, date) }
            }
        }
        for _ in sortedTokens {
            if let id = try results.removeFirst().first?.single(Int64.self) { affected.insert(id) }
        }
        try inject(.afterLinks)

        // The facts just encoded are handed to the projections as they are, not decoded again (a
        // stored text equal to one of them is that fact's own encoding).
        let known = Dictionary(rows.map { ($0.payload, $0.fact) }, uniquingKeysWith: { first, _ in first })
        var names: [String] = []
        var failures: [ProjectionFailure] = []
        let newest = rows.max { $0.signedDate < $1.signedDate }
        let cause = EventCause(
            notificationID: storedNotification ? notificationID : nil, notificationUUID: message.notificationUUID,
            notificationType: message.notificationType, subtype: message.subtype, bundleId: message.bundleId,
            transactionIds: rows.compactMap(\.transactionId), factDigest: newest?.digest,
            occurredAt: newest.map { $0.signedDate > 0 ? $0.signedDate : message.receivedAt } ?? message.receivedAt,
            earliestSignedDate: earliestSignedDate)
        for id in affected.sorted() {
            let (customer, failure) = try recompute(customerID: id, projector: projector, now: now, known: known, cause: cause)
            if !customer.isUnlinked { names.append(customer.appUserId) }
            if let failure { failures.append(failure) }
        }
        try emitMessageEvents(message, links: links, otids: sortedOTIDs, cause: cause, now: now)
        if storedNotification { countAccepted(message, rows: rows) }
        try inject(.afterProjections)
        return IngestResult(
            status: .accepted, notificationID: storedNotification ? notificationID : nil, insertedFacts: inserted, replayedFacts: replayed,
            affectedCustomers: names.sorted(), links: links, failedCustomers: failures)
    }

    /// Stores a rejected message's first ``ReceivedMessage/maxRejectedBodyBytes`` bytes, with the
    /// SHA-256 and size of the whole body: enough to audit it, while forged bodies cannot fill the
    /// disk. `body_sha256` and `body_size` are set on rejected rows only.
    func recordRejected(_ message: ReceivedMessage, code: String) throws -> Int64 {
        let inserted = try session.value(
            """
            INSERT INTO notifications (notification_uuid, claimed_uuid, source, received_at, outcome, reject_code,
                                       notification_type, subtype, body, body_sha256, body_size)
            VALUES (NULL, \(message.notificationUUID.map { String($0.prefix(256)) }), \(message.source.rawValue), \(message.receivedAt), 'rejected', \(String(code.prefix(64))), \(message.notificationType.map { String($0.prefix(64)) }), \(message.subtype.map { String($0.prefix(64)) }), \(Array(message.body.prefix(ReceivedMessage.maxRejectedBodyBytes))), \(Hex.encode(SHA256.hash(message.body))), \(Int64(message.body.count))) RETURNING id
            """, as: Int64.self)
        guard let id = inserted else { throw StorageError(.internal, "the rejected message was not stored") }
        countRejected(message, code: code)
        return id
    }

    /// Deletes up to `limit` rejected messages received before `cutoff`; returns how many.
    func purgeRejected(receivedBefore cutoff: Int64, limit: Int) throws -> Int {
        try purgeIngestCounts(before: cutoff)
        return try session.query(
            """
            DELETE FROM notifications WHERE id IN (
                SELECT id FROM notifications WHERE outcome = 'rejected' AND received_at < \(cutoff) ORDER BY id LIMIT \(Int64(limit)))
            RETURNING id
            """).count
    }

    static func normalizeToken(_ token: String) -> String { token.lowercased() }

    // MARK: Customers and links

    static let customerColumns: SQLQuery = "id, app_user_id, app_account_token, created_at"
    static func customer(id: Int64) -> SQLQuery { "SELECT \(customerColumns), merged_into FROM customers WHERE id = \(id)" }
    static func customerForUpdate(id: Int64) -> SQLQuery {
        "SELECT \(customerColumns), merged_into FROM customers WHERE id = \(id) FOR NO KEY UPDATE"
    }

    /// The notification insert; with a UUID a repeat inserts nothing (a duplicate).
    static func insertNotification(_ message: ReceivedMessage, body: [UInt8], bodyPacked: [UInt8]?) -> SQLQuery {
        let unique: SQLQuery = message.notificationUUID == nil ? "" : " ON CONFLICT DO NOTHING"
        return """
            INSERT INTO notifications (notification_uuid, source, received_at, outcome, notification_type, subtype, body, body_packed)
            VALUES (\(message.notificationUUID), \(message.source.rawValue), \(message.receivedAt), 'accepted', \(message.notificationType),
                \(message.subtype), \(body), \(bodyPacked))\(unique) RETURNING id
            """
    }

    /// One fact's values for ``insertFacts(_:)``, in its columns' order.
    static func factValues(
        _ row: FactRow, notificationID: Int64?, signed: String, signedPacked: [UInt8]?, appAccountToken: String?,
        environment: String, bundleId: String?, receivedAt: Int64, dialect: SQLDialect
    ) throws -> SQLQuery {
        """
            \(notificationID), \(LedgerCodes.value(row.kind, in: LedgerCodes.kinds, dialect: dialect)), \(FactDigest.stored(row.digest)), \(signed), \(signedPacked), '', \(try row.payloadPacked ?? FactPayload.encode(row.payload)),
            \(row.transactionId), \(row.originalTransactionId), \(appAccountToken), \(LedgerCodes.value(environment, in: LedgerCodes.environments, dialect: dialect)), \(bundleId), \(row.signedDate),
            \(receivedAt)
            """
    }

    /// A multi-row fact insert (one round trip for a notification's facts) of ``factValues(_:notificationID:signed:signedPacked:appAccountToken:environment:bundleId:receivedAt:)``;
    /// returns the ids of the facts that were new.
    static func insertFacts(_ facts: [SQLQuery], dialect: SQLDialect) -> SQLQuery {
        let rows = SQLQuery.joined(facts.map { "(\($0))" }, separator: ", ")
        return """
            INSERT INTO facts (notification_id, \(LedgerCodes.column("kind", dialect: dialect)), jws_sha256, jws, signed_packed, payload,
                               payload_packed, transaction_id, original_transaction_id, app_account_token,
                               \(LedgerCodes.column("environment", dialect: dialect)), bundle_id, signed_date, received_at)
            VALUES \(rows)
            ON CONFLICT DO NOTHING RETURNING id, kind, jws_sha256
            """
    }

    /// Who holds a subscription (its link's customer) and who its facts' token names, each
    /// resolved to the merged customer; nil: nobody.
    struct SubscriptionOwners: Decodable {
        var owner: Int64?
        var tokenOwner: Int64?
    }

    /// A customer's columns (``customerColumns``; a customer's row id is named `id`).
    struct CustomerColumns: Decodable {
        var id: Int64
        var appUserId: String
        var appAccountToken: String
        var createdAt: Int64
    }

    static func decodeCustomer(_ row: SQLRow) throws -> CustomerRecord {
        let columns = try row.decode(CustomerColumns.self)
        return CustomerRecord(id: columns.id, appUserId: columns.appUserId, appAccountToken: columns.appAccountToken, createdAt: columns.createdAt)
    }

    /// The customer an id belongs to: the id's own token and creation, the merged customer's row
    /// id, and the customer's other ids.
    func customer(appUserId: String) throws -> CustomerRecord? {
        guard
            var customer = try session.query(
                "SELECT \(Self.rootOf("c")) AS id, app_user_id, app_account_token, created_at FROM customers c WHERE app_user_id = \(appUserId)").first.map(Self.decodeCustomer)
        else { return nil }
        customer.aliases = Self.others(try group(rootID: customer.id).map(\.appUserId), than: appUserId)
        return customer
    }

    /// The row id of the customer a `customers` row (alias `table`) belongs to.
    static func rootOf(_ table: SQLQuery) -> SQLQuery { "COALESCE(\(table).merged_into, \(table).id)" }

    func customer(id: Int64) throws -> CustomerRecord? {
        try session.query(Self.customer(id: id)).first.map(Self.decodeCustomer)
    }

    func customer(token: String) throws -> CustomerRecord? {
        try session.query("SELECT \(Self.customerColumns) FROM customers WHERE app_account_token = \(token)")
            .first.map(Self.decodeCustomer)
    }

    func owner(of otid: String) throws -> CustomerRecord? {
        try session.query(
            """
            SELECT r.id, r.app_user_id, r.app_account_token, r.created_at
            FROM links l JOIN customers c ON c.id = l.customer_id JOIN customers r ON r.id = \(Self.rootOf("c"))
            WHERE l.original_transaction_id = \(otid)
            """).first.map(Self.decodeCustomer)
    }

    func insertLink(otid: String, customerID: Int64, now: Int64, via: String) throws {
        try session.query(
            """
            INSERT INTO links (original_transaction_id, customer_id, linked_at, via) VALUES (\(otid), \(customerID), \(now), \(via))
            ON CONFLICT (original_transaction_id) DO NOTHING
            """)
    }

    /// Whether a subscription nobody owns goes to a placeholder (``UnlinkedSubscription``): not
    /// when a stored fact of it carries a token, which waits for its customer instead (a customer
    /// the app has not created yet, or one erased: its purchases stay linked to nobody).
    func placeholderMayHold(_ otid: String) throws -> Bool {
        guard UnlinkedSubscription.key(otid).utf8.count <= 512 else { return false }
        return try session.query(
            "SELECT 1 FROM facts WHERE original_transaction_id = \(otid) AND app_account_token IS NOT NULL LIMIT 1").isEmpty
    }

    /// Gives the subscription `otid`, already linked, to another customer.
    func moveLink(otid: String, to customerID: Int64, now: Int64, via: String) throws {
        try session.query(
            "UPDATE links SET customer_id = \(customerID), linked_at = \(now), via = \(via) WHERE original_transaction_id = \(otid)")
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
            INSERT INTO customers (app_user_id, app_account_token, created_at) VALUES (\(appUserId), \(token), \(now))
            ON CONFLICT DO NOTHING RETURNING \(Self.customerColumns)
            """)
        guard let row = rows.first else {
            // Created concurrently (same appUserId), or the token belongs to someone else.
            if let existing = try customer(appUserId: appUserId) { return existing }
            throw StorageError(.constraint, "appAccountToken already belongs to another customer")
        }
        let created = try Self.decodeCustomer(row)
        // Facts that arrived before the customer existed: link their subscriptions now.
        let orphans = try session.values(
            """
            SELECT DISTINCT original_transaction_id FROM facts
            WHERE app_account_token = \(token) AND original_transaction_id IS NOT NULL
            """, as: String.self)
        try lockKeys(orphans.map(Self.otidKey))
        for otid in orphans.sorted() {
            if let current = try owner(of: otid) {
                guard current.isUnlinked else { continue }
                try moveLink(otid: otid, to: created.id, now: now, via: "appAccountToken")
                affected.insert(current.id)
            } else {
                try insertLink(otid: otid, customerID: created.id, now: now, via: "appAccountToken")
            }
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
        // An unlinked subscription goes to the first customer that claims it, whatever the behaviour.
        if current.isUnlinked {
            try moveLink(otid: otid, to: customer.id, now: now, via: "claim")
            affected.insert(customer.id)
            affected.insert(current.id)
            return LinkResult(originalTransactionId: otid, outcome: .linked)
        }
        switch behaviour {
        case .keep:
            return LinkResult(originalTransactionId: otid, outcome: .kept(owner: current.appUserId))
        case .transfer:
            try moveLink(otid: otid, to: customer.id, now: now, via: "transfer")
            affected.insert(customer.id)
            affected.insert(current.id)
            return LinkResult(originalTransactionId: otid, outcome: .transferred(from: current.appUserId))
        }
    }

    func ensureCustomer(appUserId: String, appAccountToken: String?, projector: Projector, now: Int64) throws -> CustomerRecord {
        var affected: Set<Int64> = []
        let customer = try ensureCustomerRow(appUserId: appUserId, appAccountToken: appAccountToken, now: now, affected: &affected)
        guard !affected.isEmpty else { return customer }
        // Subscriptions its token claimed (from nobody, or from their placeholder) bring their
        // history: its events are released for the customer, and a placeholder's superseded, from
        // the earliest of their facts, as when a message links them (held first, as a message's).
        let earliest = try session.value(
            """
            SELECT MIN(COALESCE(f.signed_date, 0)) FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
            WHERE l.customer_id = \(customer.id)
            """, as: Int64?.self) ?? nil
        for id in affected.sorted() {
            if let earliest, let hold = projector.eventHold {
                try recompute(customerID: id, projector: projector, now: now)
                try holdEvents(customerID: id, earliestSignedDate: earliest, hold: hold, now: now)
            } else {
                try recompute(customerID: id, projector: projector, now: now, releasing: earliest)
            }
        }
        try inject(.afterProjections)
        return customer
    }
}
