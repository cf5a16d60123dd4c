import EntitledCrypto

// Signed text in the packed layout (schema version 14, `SignedPart`): headers interned, texts
// rebuilt, and rows of the older layout repacked in resumable batches.

extension Ledger {
    /// The `jws_headers` id of each header, by its digest, inserting the new ones. On PostgreSQL a
    /// concurrent insert of the same header is waited for (unique index) and then read.
    func internHeaders(_ headers: Set<JWSHeader>) throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        for header in headers {
            let digest = header.digest
            let select: SQLQuery = "SELECT id FROM jws_headers WHERE sha256 = \(digest)"
            if let id = try session.value(select, as: Int64.self) {
                ids[digest] = id
                continue
            }
            let inserted = try session.value(
                "INSERT INTO jws_headers (sha256, header) VALUES (\(digest), \(String(decoding: header.text, as: UTF8.self))) ON CONFLICT (sha256) DO NOTHING RETURNING id",
                as: Int64.self)
            guard let id = try inserted ?? session.value(select, as: Int64.self) else {
                throw StorageError(.internal, "JWS header could not be stored")
            }
            ids[digest] = id
        }
        return ids
    }

    /// The keys (``FactRow/referenceKey``) whose references a message's packed texts store
    /// without their signatures, the stored fact's being the same: its rows' own, but for a key two
    /// of its rows share (twins in one message), which keep theirs; by kind alone, those of a kind
    /// no other row of the message has.
    static func ownReferences(_ rows: [FactRow]) -> OwnFacts {
        let signatures = Set(Dictionary(rows.map { ($0.referenceKey, 1) }, uniquingKeysWith: +).filter { $0.value == 1 }.keys)
        let kinds = Dictionary(rows.map { ($0.kind, 1) }, uniquingKeysWith: +)
        return OwnFacts(signatures: signatures, byKind: signatures.intersection(rows.filter { kinds[$0.kind] == 1 }.map(\.referenceKey)))
    }

    /// After a message's fact insert (`stored`: the kind and key of each new row) in which some of
    /// its facts were already stored, perhaps as twins under other signature bytes: its new rows
    /// and its `body` that refer to one of those are stored again with the signatures they carry.
    func keepSignatures(
        stored: [SQLRow], own: OwnFacts, rows: [FactRow], headerIDs: [String: Int64], body: [SignedPart]?, notificationID: Int64
    ) throws {
        let new = Set(try stored.map { try $0.text(1) + " " + FactDigest.hex(stored: $0.blob(2)) })
        let replayed = own.signatures.subtracting(new)
        let own = own.keeping(new)
        guard !replayed.isEmpty else { return }
        func refers(_ parts: [SignedPart]) -> Bool {
            parts.contains { part in
                switch part {
                case .literal: false
                case .jws(_, let payload, _): refers(payload)
                case .reference(let kind, let digest, _): replayed.contains(kind + " " + digest)
                }
            }
        }
        for row in rows where own.signatures.contains(row.referenceKey) {
            guard let packed = row.packed, refers(packed) else { continue }
            let signed = try SignedTextPacker.encode(packed, headerIDs: headerIDs, literalsWithFact: row.literalsWithFact, own: own)
            try session.query("UPDATE facts SET signed_packed = \(signed) WHERE \(LedgerKeys.fact(kind: row.kind, key: FactDigest.stored(row.digest), dialect: session.dialect))")
        }
        if let body, refers(body) {
            let packed = try SignedTextPacker.encode(body, headerIDs: [:], literalsWithFact: false, own: own)
            try session.query("UPDATE notifications SET body_packed = \(packed) WHERE id = \(notificationID)")
        }
    }

    /// A notification's body as received (nil: no such row): the one reconstruction, as for facts.
    func notificationBody(id: Int64, reader: SignedTextReader) throws -> [UInt8]? {
        guard let row = try session.row("SELECT body, body_packed FROM notifications WHERE id = \(id)", as: StoredBody.self) else {
            return nil
        }
        return try reader.text(raw: row.body, packed: row.bodyPacked, message: id)
    }

    /// Facts after `afterID` (up to `limit`), each with its signed text rebuilt.
    func signedFacts(afterID: Int64, limit: Int) throws -> [SignedFactText] {
        let reader = SignedTextReader(session: session)
        return try session.query(
            """
            SELECT id, kind, bundle_id, signed_date, environment, notification_id, jws, signed_packed, payload, payload_packed FROM facts
            WHERE id > \(afterID) ORDER BY id LIMIT \(Int64(limit))
            """).map { row in
            let fact = try row.decode(SignedFactColumns.self)
            let text = try row.decode(StoredSignedText.self).text(reader)
            return SignedFactText(
                id: fact.id, kind: fact.kind, bundleId: fact.bundleId, signedDate: fact.signedDate, environment: fact.environment,
                text: String(decoding: text, as: UTF8.self))
        }
    }

    // MARK: Repacking rows of the older layout

    /// One batch of the version-14 rewrite: the next `limit` rows of `phase` after its stored
    /// cursor, packed where that gives the same bytes back (checked by rebuilding each), and the
    /// cursor moved, in the caller's transaction. Returns the rows looked at (0: the phase is done)
    /// and the cursor.
    func repackBatch(_ phase: RepackPhase, limit: Int, fault: RepackFault?) throws -> (rows: Int, cursor: Int64) {
        let lock: SQLQuery = isPostgres ? " FOR UPDATE" : ""
        guard let state = try session.row("SELECT after_id, done FROM repack_progress WHERE phase = \(phase.rawValue)\(lock)", as: RepackState.self),
            !state.done
        else { return (0, 0) }
        let after = state.afterId
        let reader = SignedTextReader(session: session)
        let (count, last) =
            switch phase {
            case .facts: try repackFacts(after: after, limit: limit, reader: reader)
            case .notifications: try repackBodies(after: after, limit: limit, reader: reader)
            case .compressFacts: try compressFacts(after: after, limit: limit)
            }
        try session.query(
            "UPDATE repack_progress SET after_id = \(last ?? after), done = \(count < limit ? 1 : 0) WHERE phase = \(phase.rawValue)")
        try fault?(phase.rawValue, last ?? after)
        return (count, last ?? after)
    }

    /// The rewrites, in the order they run: version 14's (signed text packed), version 16's
    /// (JSON compressed, ``compressFacts(after:limit:)``).
    enum RepackPhase: String, CaseIterable, Sendable {
        case facts
        case notifications
        case compressFacts = "compress facts"

        /// The table it rewrites.
        var table: SQLQuery { self == .notifications ? "notifications" : "facts" }
    }

    /// The signed texts of a notification's facts, for references (rebuilt when packed).
    private func siblings(ofNotification id: Int64, reader: SignedTextReader) throws -> SignedSiblings {
        let rows = try session.query(
            "SELECT kind, notification_id, jws, signed_packed, payload, payload_packed FROM facts WHERE notification_id = \(id)")
        return SignedSiblings(
            try rows.map { row in
                let text = String(decoding: try row.decode(StoredSignedText.self).text(reader), as: UTF8.self)
                return (try row.decode(FactKind.self).kind, text, FactDigest.hex(text))
            })
    }

    private func repackFacts(after: Int64, limit: Int, reader: SignedTextReader) throws -> (Int, Int64?) {
        let rows = try session.rows(
            """
            SELECT id, notification_id, jws, CASE WHEN signed_packed IS NULL THEN 1 ELSE 0 END AS pending FROM facts
            WHERE id > \(after) ORDER BY id LIMIT \(Int64(limit))
            """, as: UnpackedFact.self)
        var siblingsByNotification: [Int64: SignedSiblings] = [:]
        for row in rows where row.pending {
            let text = Array(row.jws.utf8)
            guard SignedTextPacker.split(text) != nil else { continue }
            var siblings = SignedSiblings()
            if let notification = row.notificationId {
                if siblingsByNotification[notification] == nil {
                    siblingsByNotification[notification] = try self.siblings(ofNotification: notification, reader: reader)
                }
                siblings = siblingsByNotification[notification]!
            }
            guard let part = SignedTextPacker.packJWS(text, siblings: siblings) else { continue }
            var headers: Set<JWSHeader> = []
            SignedTextPacker.headers(in: [part], into: &headers)
            let ids = try internHeaders(headers)
            let packed = try SignedTextPacker.encode([part], headerIDs: ids, literalsWithFact: false)
            // Only what gives the same bytes back replaces the text.
            guard try reader.unpack(packed, context: .none, message: row.notificationId, depth: 0) == text else { continue }
            try session.query(
                "UPDATE facts SET jws = '', signed_packed = \(packed) WHERE id = \(row.id) AND signed_packed IS NULL")
        }
        return (rows.count, rows.last?.id)
    }

    private func repackBodies(after: Int64, limit: Int, reader: SignedTextReader) throws -> (Int, Int64?) {
        let rows = try session.rows(
            """
            SELECT id, body, CASE WHEN outcome = 'accepted' AND body_packed IS NULL THEN 1 ELSE 0 END AS pending FROM notifications
            WHERE id > \(after) ORDER BY id LIMIT \(Int64(limit))
            """, as: UnpackedBody.self)
        for row in rows where row.pending {
            let (id, body) = (row.id, row.body)
            let siblings = try siblings(ofNotification: id, reader: reader)
            guard !siblings.entries.isEmpty else { continue }
            let parts = SignedTextPacker.referencing(body, siblings: siblings)
            guard parts.contains(where: { if case .reference = $0 { true } else { false } }) else { continue }
            let packed = try SignedTextPacker.encode(parts, headerIDs: [:], literalsWithFact: false)
            guard try reader.unpack(packed, context: .none, message: id, depth: 0) == body else { continue }
            try session.query(
                "UPDATE notifications SET body = \([]), body_packed = \(packed) WHERE id = \(id) AND body_packed IS NULL")
        }
        return (rows.count, rows.last?.id)
    }

    /// One batch of the version-16 rewrite: each fact's JSON compressed into `payload_packed`,
    /// and its signed text, when packed in format 1, rewritten in the current format (3) with the
    /// literals compressed with that JSON. Each is checked before it replaces what was stored: the
    /// JSON decompresses to itself, the new signed form decodes to the very same parts (so it
    /// rebuilds the same bytes).
    private func compressFacts(after: Int64, limit: Int) throws -> (Int, Int64?) {
        let rows = try session.rows(
            """
            SELECT id, payload, signed_packed, CASE WHEN payload_packed IS NULL THEN 1 ELSE 0 END AS pending FROM facts
            WHERE id > \(after) ORDER BY id LIMIT \(Int64(limit))
            """, as: UncompressedFact.self)
        for row in rows where row.pending {
            var signed = row.signedPacked
            var parts: [StoredPart]?
            if let packed = signed, packed.first == SignedTextFormat.inline {
                parts = try SignedTextFormat.decode(packed, context: .none)
                signed = parts.map { SignedTextFormat.encode($0, literalsWithFact: true) }
            }
            let payload = try FactPayload.encode(row.payload, literals: parts.map(SignedTextFormat.literals))
            let texts = try FactPayload.texts(payload: "", packed: payload)
            guard texts.json == Array(row.payload.utf8) else { throw StorageError(.internal, "compressed JSON does not read back") }
            if let parts, let signed, try SignedTextFormat.decode(signed, context: texts) != parts {
                throw StorageError(.internal, "compressed signed text does not read back")
            }
            try session.query(
                "UPDATE facts SET payload = '', payload_packed = \(payload), signed_packed = \(signed) WHERE id = \(row.id) AND payload_packed IS NULL")
        }
        return (rows.count, rows.last?.id)
    }

    /// The highest row id of a phase's table (progress reports).
    func repackTotal(_ phase: RepackPhase) throws -> Int64 {
        try session.value("SELECT COALESCE(MAX(id), 0) FROM \(phase.table)", as: Int64.self) ?? 0
    }
}

/// Tests only: called at the end of each repack batch, before it commits, with the phase and the
/// cursor it reached; throwing rolls the batch back (a process killed there).
typealias RepackFault = @Sendable (_ phase: String, _ cursor: Int64) throws -> Void

/// A fact's signed text as stored (`jws`, `signed_packed`) with its JSON (`payload`,
/// `payload_packed`), which a packed text's literals were deflated with.
struct StoredSignedText: Decodable {
    /// The message that stored it, which its references by kind are found in.
    var notificationId: Int64?
    var jws: String
    var signedPacked: [UInt8]?
    var payload: String
    var payloadPacked: [UInt8]?

    /// The JSON its packed form is read with.
    var context: FactTexts { get throws { try FactPayload.texts(payload: payload, packed: payloadPacked) } }

    /// The text as received.
    func text(_ reader: SignedTextReader) throws -> [UInt8] {
        try reader.text(raw: Array(jws.utf8), packed: signedPacked, context: try context, message: notificationId)
    }
}

/// A notification's body as stored: as received (`body`), or packed (`body_packed`, then `body` empty).
private struct StoredBody: Decodable {
    var body: [UInt8]
    var bodyPacked: [UInt8]?
}

/// The columns of a fact that ``SignedFactText`` names besides its text.
private struct SignedFactColumns: Decodable {
    var id: Int64
    var kind: String
    var bundleId: String?
    var signedDate: Int64?
    var environment: String?
}

private struct FactKind: Decodable {
    var kind: String
}

/// A rewrite's cursor (`repack_progress`).
private struct RepackState: Decodable {
    var afterId: Int64
    var done: Bool
}

/// A fact the version-14 rewrite looks at; `pending`: not packed yet.
private struct UnpackedFact: Decodable {
    var id: Int64
    var notificationId: Int64?
    var jws: String
    var pending: Bool
}

/// A message the version-14 rewrite looks at; `pending`: accepted and not packed yet.
private struct UnpackedBody: Decodable {
    var id: Int64
    var body: [UInt8]
    var pending: Bool
}

/// A fact the version-16 rewrite looks at; `pending`: its JSON not compressed yet.
private struct UncompressedFact: Decodable {
    var id: Int64
    var payload: String
    var signedPacked: [UInt8]?
    var pending: Bool
}

/// A stored fact with its signed text rebuilt (``SignedLedger/signedFacts(after:limit:)``).
public struct SignedFactText: Sendable, Hashable {
    /// The fact's row id.
    public var id: Int64
    /// `transaction`, `renewal`, `notification`, …
    public var kind: String
    /// The app it came for.
    public var bundleId: String?
    /// When it was signed (ms).
    public var signedDate: Int64?
    /// `Production`, `Sandbox`, … as stored.
    public var environment: String?
    /// The signed text exactly as received (a compact JWS), or a fact's identity when it has no
    /// signed form.
    public var text: String
}

/// Reading back what was signed, byte for byte (`entitled check --reverify`, tests). The server's
/// stores (SQLite, PostgreSQL) conform.
public protocol SignedLedger: Sendable {
    /// Facts after row `afterID` in id order, at most `limit` (1…1000), each with its signed text.
    func signedFacts(after afterID: Int64, limit: Int) async throws -> [SignedFactText]
    /// The body of notification row `id` as received (accepted) or as kept (a rejected one's
    /// prefix); nil when there is no such row.
    func notificationBody(id: Int64) async throws -> [UInt8]?
}

extension SessionBackedStore {
    func signedFacts(after afterID: Int64, limit: Int) async throws -> [SignedFactText] {
        guard (1...1000).contains(limit) else { throw StorageError(.invalidArgument, "limit must be 1…1000") }
        return try await read { try Ledger(session: $0, fault: nil).signedFacts(afterID: afterID, limit: limit) }
    }

    func notificationBody(id: Int64) async throws -> [UInt8]? {
        try await read { session in
            try Ledger(session: session, fault: nil).notificationBody(id: id, reader: SignedTextReader(session: session))
        }
    }

    /// Rewrites rows stored before schema version 14 into the packed layout, batch after batch (each
    /// its own transaction, its cursor stored with it: a process killed half-way continues where
    /// the last committed batch ended), reporting progress to `log`.
    /// `pending`: ``Schema/pendingRepack(_:)``, read in the migration's transaction (once done,
    /// a start costs no statement more).
    func repackLegacyRows(pending: [String]) async throws {
        guard !pending.isEmpty else { return }
        try await repackLegacyRows(pending: pending, log: configuration.log, fault: configuration.repackFault, batch: configuration.repackBatch)
    }

    func repackLegacyRows(pending: [String], log: StorageLog?, fault: RepackFault?, batch: Int) async throws {
        for phase in Ledger.RepackPhase.allCases where pending.contains(phase.rawValue) {
            let total = try await read { try Ledger(session: $0, fault: nil).repackTotal(phase) }
            var done = 0
            while true {
                let (rows, cursor) = try await write { session in
                    let step = { try Ledger(session: session, fault: nil).repackBatch(phase, limit: batch, fault: fault) }
                    // Part of the migration: waits as long as it takes, like the migration's SQL.
                    guard let connection = session as? PostgresConnection else { return try step() }
                    return try connection.withoutStatementTimeout(step)
                }
                done += rows
                if rows > 0 {
                    log?("ledger repack", ["table": phase.rawValue, "rows": String(done), "at id": String(cursor), "of": String(total)])
                }
                if rows < batch { break }
            }
        }
    }
}

