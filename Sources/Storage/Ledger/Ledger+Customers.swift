import Entitlements
import Foundation

// Customers as people: aliases (merges), the operator's facts, export and erasure.

extension Ledger {
    /// Every `customers` row of the customer `rootID` (its own and its aliases').
    static func group(_ rootID: Int64) -> SQLQuery {
        "SELECT id, app_user_id, app_account_token, created_at FROM customers WHERE id = \(rootID) OR merged_into = \(rootID)"
    }
    /// Customers with ids of their own (not aliases), in id order, after `after`, at most `limit`.
    static func rootIDs(after: Int64, limit: Int) -> SQLQuery {
        "SELECT id FROM customers WHERE id > \(after) AND merged_into IS NULL ORDER BY id LIMIT \(limit)"
    }

    /// The rows of every id of the customer `rootID`.
    func group(rootID: Int64) throws -> [CustomerRecord] {
        try session.query(Self.group(rootID)).map(Self.decodeCustomer)
    }

    /// `ids` without `id`, sorted: byte equality and order (Swift's `==` on `String` would call two
    /// spellings of one name equal, while storage keys them apart).
    static func others(_ ids: [String], than id: String) -> [String] {
        ids.filter { !$0.utf8.elementsEqual(id.utf8) }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// See ``CustomerDirectory/addAlias(_:to:actor:projector:now:)``.
    func addAlias(_ alias: String, to appUserId: String, actor: String?, projector: Projector, now: Int64) throws -> AliasOutcome {
        guard !alias.utf8.elementsEqual(appUserId.utf8) else { throw StorageError(.invalidArgument, "an id cannot be its own alias") }
        // Both ids' decisions are taken one transaction at a time (PostgreSQL).
        try lockKeys([Self.userKey(alias), Self.userKey(appUserId)])
        var affected: Set<Int64> = []
        let customer = try ensureCustomerRow(appUserId: appUserId, appAccountToken: nil, now: now, affected: &affected)
        let root = customer.id
        _ = try lockedCustomer(root)
        let existing = try session.row("SELECT id, merged_into FROM customers WHERE app_user_id = \(alias)", as: CustomerMerge.self)
        let outcome: AliasOutcome
        if let existing {
            let (id, mergedInto) = (existing.id, existing.mergedInto)
            if id == root || mergedInto == root { return .alreadyAlias }
            // An id of another customer with several ids belongs to that customer.
            let ownAliases = try session.value("SELECT COUNT(*) FROM customers WHERE merged_into = \(id)", as: Int64.self) ?? 0
            guard mergedInto == nil, ownAliases == 0 else {
                throw StorageError(.aliasConflict, "this id already belongs to another customer")
            }
            _ = try lockedCustomer(id)
            // Its projection becomes the merged customer's; its links and tokens stay and resolve.
            let stored = try storedState(customerID: id)
            try session.pipeline([
                ("DELETE FROM entitlement_projections WHERE customer_id = \(id)" as SQLQuery),
                ("DELETE FROM subscription_projections WHERE customer_id = \(id)" as SQLQuery),
                ("DELETE FROM customer_states WHERE customer_id = \(id)" as SQLQuery),
                ("UPDATE customers SET merged_into = \(root) WHERE id = \(id)" as SQLQuery),
            ])
            noteRemoved(stored?.projection)
            outcome = .merged
        } else {
            var created: Set<Int64> = []
            let record = try ensureCustomerRow(appUserId: alias, appAccountToken: nil, now: now, affected: &created)
            try session.query("UPDATE customers SET merged_into = \(root) WHERE id = \(record.id)")
            outcome = .added
        }
        try session.query(
            "INSERT INTO customer_events (kind, customer_id, subject, actor, recorded_at) VALUES ('merged', \(root), \(alias), \(actor), \(now))")
        try recompute(customerID: root, projector: projector, now: now)
        try emitCustomerEvent(
            .customerMerged, customer: customer, key: [alias], details: ["alias": alias, "outcome": outcome == .merged ? "merged" : "added"],
            answer: try storedState(customerID: root)?.projection.state ?? [], now: now, customerID: root)
        try inject(.afterProjections)
        return outcome
    }

    /// Appends an event about a customer as a person (`customer.merged`, `customer.deleted`), in the
    /// transaction of the change; keyed by the change, so a repeated change adds none.
    /// - Returns: the event's id.
    @discardableResult
    func emitCustomerEvent(
        _ type: EventType, customer: CustomerRecord, key: [String], details: [String: String], answer: [UInt8], now: Int64,
        customerID: Int64?
    ) throws -> String {
        let event = OutboxEvent(
            sequence: 0, id: EventDerivation.eventID(appUserId: customer.appUserId, type: type.rawValue, key: key), type: type.rawValue,
            appUserId: customer.appUserId, appAccountToken: customer.appAccountToken, environment: nil, bundleId: nil,
            productId: nil, originalTransactionId: nil, entitlements: [], details: details, cause: "{}", occurredAt: now,
            recordedAt: now, answer: answer)
        try insertEvent(event, customerID: customerID)
        return event.id
    }

    static func userKey(_ appUserId: String) -> String { "user:" + appUserId }

    /// See ``CustomerDirectory/appendCustomerFact(_:projector:now:)``.
    func appendCustomerFact(_ row: FactRow, projector: Projector, now: Int64) throws -> Bool {
        let token = row.appAccountToken.map(Self.normalizeToken)
        let inserted = try session.query(
            Self.insertFacts([
                try Self.factValues(
                    row, notificationID: nil, signed: row.signed, signedPacked: nil, appAccountToken: token,
                    environment: row.fact.environment.rawValue, bundleId: nil, receivedAt: now, dialect: session.dialect)
            ], dialect: session.dialect)
        ).count
        if let token {
            try lockKeys([Self.tokenKey(token)])
            if let id = try session.value("SELECT \(Self.rootOf("c")) FROM customers c WHERE c.app_account_token = \(token)", as: Int64.self)
            {
                try recompute(customerID: id, projector: projector, now: now, known: [row.payload: row.fact])
            }
        }
        try inject(.afterProjections)
        return inserted > 0
    }

    /// See ``CustomerDirectory/eraseCustomer(appUserId:actor:now:)``.
    func erase(appUserId: String, actor: String?, now: Int64) throws -> ErasureReport? {
        guard let customer = try customer(appUserId: appUserId) else { return nil }
        let root = customer.id
        _ = try lockedCustomer(root)
        let members = try group(rootID: root)
        try lockKeys(members.map { Self.tokenKey($0.appAccountToken) } + members.map { Self.userKey($0.appUserId) })
        let newestEvent = try session.value("SELECT COALESCE(MAX(seq), 0) FROM events", as: Int64.self) ?? 0
        var subscriptions = 0
        var ownFacts = 0
        for member in members {
            subscriptions += try session.query(
                "DELETE FROM links WHERE customer_id = \(member.id) RETURNING original_transaction_id").count
            // The server's own facts about the customer (grants, spends) go with it; Apple's stay
            // (they still verify).
            ownFacts += try session.query(
                """
                DELETE FROM facts WHERE original_transaction_id IS NULL AND app_account_token = \(member.appAccountToken)
                    AND kind IN (\(Fact.promotionalGrantKind), \(Fact.promotionalGrantEndKind), \(Fact.consumableSpendKind)) RETURNING id
                """).count
            noteRemoved(try storedState(customerID: member.id)?.projection)
            try session.pipeline([
                ("DELETE FROM entitlement_projections WHERE customer_id = \(member.id)" as SQLQuery),
                ("DELETE FROM subscription_projections WHERE customer_id = \(member.id)" as SQLQuery),
                ("DELETE FROM customer_states WHERE customer_id = \(member.id)" as SQLQuery),
                ("DELETE FROM customer_events WHERE customer_id = \(member.id)" as SQLQuery),
                ("DELETE FROM offer_signatures WHERE app_user_id = \(member.appUserId)" as SQLQuery),
                ("DELETE FROM customer_consents WHERE app_user_id = \(member.appUserId)" as SQLQuery),
                ("DELETE FROM customer_attributes WHERE customer_id = \(member.id)" as SQLQuery),
                ("DELETE FROM experiment_enrolments WHERE customer_id = \(member.id)" as SQLQuery),
                // Their events (which carry their ids and answers) and those events' deliveries.
                ("DELETE FROM webhook_deliveries WHERE customer_key = \(member.appUserId)" as SQLQuery),
                ("DELETE FROM events WHERE customer_id = \(member.id) OR app_user_id = \(member.appUserId)" as SQLQuery),
            ])
            // Their held events (none are released for an erased customer).
            try session.query("DELETE FROM event_holds WHERE customer_id = \(member.id)")
        }
        // Events of theirs still waiting for the commit (an earlier job of this group) go too.
        session.tail.dropEvents(customerIDs: Set(members.map(\.id)), appUserIds: Set(members.map(\.appUserId)))
        try scrubOtherEvents(naming: Set(members.map(\.appUserId)))
        try session.query("DELETE FROM customers WHERE merged_into = \(root)")
        try session.query("DELETE FROM customers WHERE id = \(root)")
        // The backend must learn whom it was: the event names the ids until every endpoint has
        // settled its delivery and the feed has kept it for a while (``scrubErasureEvents``). Its id
        // is random (a digest of the erased id would keep a trace of it).
        let record = members.first { $0.id == root } ?? customer
        let others = Self.others(members.map(\.appUserId), than: record.appUserId)
        let deletedID = try emitCustomerEvent(
            .customerDeleted, customer: record, key: [UUID().uuidString], details: ["aliases": Self.json(others)], answer: [],
            now: now, customerID: nil)
        if !isPostgres {
            // SQLite gives a new row the highest `seq` + 1: with the customer's newest events just
            // deleted that would reuse a `seq` feed readers and webhook cursors have passed. So
            // this event is written now (one writer: no lock order to keep) and moved past them;
            // events still in the tail are appended after it.
            let pending = session.tail.takeEvent(id: deletedID)
            if let pending { try session.pipeline([Self.insertEventStatement(pending)]) }
            try session.query("UPDATE events SET seq = \(newestEvent + 1) WHERE event_id = \(deletedID) AND seq <= \(newestEvent)")
        }
        let report = ErasureReport(ids: members.count, subscriptions: subscriptions, ownFacts: ownFacts)
        let detail = "{\"ownFacts\":\(report.ownFacts),\"ids\":\(report.ids),\"subscriptions\":\(report.subscriptions)}"
        try session.query(
            "INSERT INTO customer_events (kind, customer_id, subject, actor, detail, recorded_at) VALUES ('erased', NULL, NULL, \(actor), \(detail), \(now))")
        try inject(.beforeCommit)
        return report
    }

    /// Event fields that name another customer: a `customer.transferred` event's previous owner
    /// (`data.from`). The event belongs to the new owner and stays; the field goes when its
    /// customer is erased.
    static let namingDetails: [String: Set<String>] = ["customer.transferred": ["from"]]

    /// `event`'s details without the ``namingDetails`` fields whose value is one of `appUserIds`;
    /// nil when it names none of them.
    static func scrubbed(_ event: OutboxEvent, naming appUserIds: Set<String>) -> [String: String]? {
        guard let keys = namingDetails[event.type] else { return nil }
        let details = event.details.filter { !(keys.contains($0.key) && appUserIds.contains($0.value)) }
        return details.count == event.details.count ? nil : details
    }

    /// Removes the erased ids from other customers' stored events (and so from their exports,
    /// the feed and webhook deliveries, which render the stored event at each attempt) and from
    /// those still pending in this transaction. Erasure is rare: this reads the events of the
    /// types that can name a customer, whose details contain one of the ids.
    private func scrubOtherEvents(naming appUserIds: Set<String>) throws {
        session.tail.scrubDetails(naming: appUserIds)
        for type in Self.namingDetails.keys.sorted() {
            for id in appUserIds.sorted() {
                let needle = Self.json(id)
                let contains: SQLQuery = isPostgres ? "strpos(details, \(needle)) > 0" : "instr(details, \(needle)) > 0"
                let rows = try session.query(
                    "SELECT \(Self.eventColumns) FROM events WHERE type = \(type) AND \(contains)")
                for event in try rows.map(Self.decodeEvent) {
                    guard let details = Self.scrubbed(event, naming: appUserIds) else { continue }
                    try session.query("UPDATE events SET details = \(Self.json(details)) WHERE event_id = \(event.id)")
                }
            }
        }
    }

    /// A table's columns for the export: name and whether it holds bytes.
    private typealias Columns = [(name: String, blob: Bool)]

    private static func columns(_ names: String, blob: Set<String> = []) -> Columns {
        names.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.map { ($0, blob.contains($0)) }
    }

    /// Columns exported as the signed text they hold, rebuilt from their packed form
    /// (``SignedTextReader``): the export has the bytes received, whatever the layout.
    private static let packedColumns: [String: (column: String, packed: String)] = [
        "facts": ("jws", "signed_packed"), "notifications": ("body", "body_packed"),
    ]

    private static let exportTables: [(table: String, columns: Columns)] = [
        ("customers", columns("id, app_user_id, app_account_token, created_at, merged_into")),
        (
            "links", columns("original_transaction_id, customer_id, linked_at, via")
        ),
        (
            "facts",
            columns(
                "id, notification_id, kind, jws_sha256, jws, payload, transaction_id, original_transaction_id, app_account_token, environment, bundle_id, signed_date, received_at"
            )
        ),
        (
            "notifications",
            columns(
                "id, notification_uuid, claimed_uuid, source, received_at, outcome, reject_code, notification_type, subtype, body, body_sha256, body_size",
                blob: ["body"])
        ),
        (
            "customer_states", columns("app_user_id, customer_id, app_account_token, created_at, state, projection_rows, computed_at, projection_error")
        ),
        (
            "entitlement_projections",
            columns(
                "customer_id, entitlement, environment, status, active, product_id, original_transaction_id, expires_at, grace_until, will_renew")
        ),
        (
            "subscription_projections",
            columns("original_transaction_id, customer_id, product_id, group_id, status, expires_at, grace_until, auto_renew, environment")
        ),
        (
            "offer_signatures", columns("id, app_user_id, bundle_id, product_id, offer_id, kind, format, nonce, signed_at")
        ),
        (
            "customer_consents", columns("app_user_id, consented, recorded_at")
        ),
        (
            "customer_attributes", columns("customer_id, name, value, updated_at")
        ),
        (
            "experiment_enrolments", columns("experiment_id, customer_id, variant, offering_id, enrolled_at")
        ),
        (
            "customer_events", columns("id, kind, customer_id, subject, actor, detail, recorded_at")
        ),
        (
            "events",
            columns(
                "seq, event_id, type, customer_id, app_user_id, app_account_token, environment, bundle_id, product_id, original_transaction_id, entitlements, details, cause, occurred_at, recorded_at, answer"
            )
        ),
        (
            // Deliveries are keyed by the id the event named.
            "webhook_deliveries",
            columns(
                "id, endpoint, event_seq, event_id, event_type, customer_key, status, attempts, next_attempt_at, first_attempt_at, last_attempt_at, last_status, last_error, created_at, updated_at"
            )
        ),
    ]

    /// The rows of `table` that are the customer `id`'s (its own ids' and its aliases').
    private func exportFilter(_ table: String, id: Int64) -> SQLQuery {
        let ids: SQLQuery = "SELECT id FROM customers WHERE id = \(id) OR merged_into = \(id)"
        let userIds: SQLQuery = "SELECT app_user_id FROM customers WHERE id = \(id) OR merged_into = \(id)"
        switch table {
        case "customers": return "id = \(id) OR merged_into = \(id)"
        case "facts": return "id IN (SELECT id FROM (\(Self.facts(of: id, jws: false))) AS customer_facts)"
        case "notifications": return "id IN (SELECT notification_id FROM (\(Self.facts(of: id, jws: false))) AS customer_facts)"
        case "offer_signatures", "customer_consents": return "app_user_id IN (\(userIds))"
        case "events": return "customer_id IN (\(ids)) OR (customer_id IS NULL AND app_user_id IN (\(userIds)))"
        case "webhook_deliveries": return "customer_key IN (\(userIds))"
        default: return "customer_id IN (\(ids))"
        }
    }

    /// The exported columns that hold integers (times, ids, flags).
    private static let integerColumns: Set<String> = [
        "id", "customer_id", "created_at", "merged_into", "linked_at", "notification_id", "signed_date", "received_at",
        "computed_at", "active", "will_renew", "expires_at", "grace_until", "auto_renew", "signed_at", "consented",
        "recorded_at", "body_size", "seq", "variant", "enrolled_at", "occurred_at", "event_seq", "attempts", "next_attempt_at", "first_attempt_at",
        "last_attempt_at", "last_status", "updated_at",
    ]

    /// See ``CustomerDirectory/exportCustomer(appUserId:)``.
    func export(appUserId: String) throws -> CustomerExport? {
        guard let customer = try customer(appUserId: appUserId) else { return nil }
        var tables: [(table: String, rows: [[(column: String, value: CustomerExport.Value)]])] = []
        let reader = SignedTextReader(session: session)
        for (table, columns) in Self.exportTables {
            let packed = Self.packedColumns[table]
            // A fact's JSON is exported as the text, whether compressed (`payload_packed`) or not.
            let payload = table == "facts" ? columns.firstIndex { $0.name == "payload" } : nil
            // So is an event's answer (`answer_packed`).
            let answer = table == "events" ? columns.firstIndex { $0.name == "answer" } : nil
            // The message a packed text's references by kind are found in.
            let message = columns.firstIndex { $0.name == (table == "notifications" ? "id" : "notification_id") }
            let selected = columns.map(\.name) + (packed.map { [$0.packed] } ?? []) + (payload == nil ? [] : ["payload_packed"])
                + (answer == nil ? [] : ["answer_packed"])
            // Names from the constant table above, never input.
            let query = SQLQuery(verbatim: "SELECT \(selected.joined(separator: ", ")) FROM \(table) WHERE ")
                + exportFilter(table, id: customer.id) + " ORDER BY 1"
            let rows = try session.query(query).map { row in
                let texts = payload == nil ? nil : try FactPayload.texts(row)
                let json = texts?.json
                return try columns.indices.map { index -> (column: String, value: CustomerExport.Value) in
                    let value: CustomerExport.Value
                    if let packed, columns[index].name == packed.column {
                        let raw = columns[index].blob ? try row.blob(index) : Array((try row.text(index)).utf8)
                        let text = try reader.text(
                            raw: raw, packed: try row.optionalBlob(columns.count), context: texts ?? .none,
                            message: try message.flatMap { try row.optionalInt($0) })
                        value = .text(String(decoding: text, as: UTF8.self))
                    } else if let json, index == payload {
                        value = .text(String(decoding: json, as: UTF8.self))
                    } else if index == answer {
                        let text = try EventAnswer.bytes(answer: try row.text(index), packed: try row.optionalBlob(columns.count))
                        value = .text(String(decoding: text, as: UTF8.self))
                    } else if columns[index].name == "jws_sha256" {
                        // Stored as the digest's bytes; exported as the hex text it always was.
                        value = .text(FactDigest.hex(stored: try row.blob(index)))
                    } else if columns[index].blob {
                        value = row.values[index] == .null ? .null : .text(String(decoding: try row.blob(index), as: UTF8.self))
                    } else if case .int(let number) = row.values[index] {
                        value = .int(number)
                    } else if Self.integerColumns.contains(columns[index].name), let number = try row.optionalInt(index) {
                        // PostgreSQL answers every value as text.
                        value = .int(number)
                    } else {
                        value = try row.optionalText(index).map(CustomerExport.Value.text) ?? .null
                    }
                    return (columns[index].name, value)
                }
            }
            tables.append((table, rows))
        }
        return CustomerExport(tables: tables)
    }
}

/// A customer row's id and the customer it is an alias of (nil: none).
private struct CustomerMerge: Decodable {
    var id: Int64
    var mergedInto: Int64?
}
