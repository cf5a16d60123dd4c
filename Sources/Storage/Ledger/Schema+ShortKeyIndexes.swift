import EntitledCrypto

extension Schema {
    /// The ledger's two unique keys — a fact's kind and key, a message's UUID — checked through
    /// hashes instead of B-tree indexes holding the whole key.
    ///
    /// PostgreSQL: each unique constraint becomes an exclusion constraint through a hash index
    /// (`ON CONFLICT DO NOTHING` honours it as it did the unique one; concurrent inserts of one key
    /// wait for each other as before): an entry holds the key's 4-byte hash code, not its 45 bytes
    /// (the kind's text, 32 bytes and their alignment) or its UUID's 37.
    ///
    /// SQLite, which has no hash index: a fact's key is a SHA-256 digest, so its first 4 bytes are
    /// already a uniform hash; a message's UUID ends in random characters (its last 8 are 32 random
    /// bits in every UUID version). An index of those (``LedgerKeys``) finds a key's candidates,
    /// which the lookup then compares whole, as PostgreSQL's hash indexes do with their 4-byte
    /// codes: an entry is about a quarter of a `(kind, jws_sha256)` entry (the kind's text and 32
    /// bytes), and a candidate that is not the key (one in 4 billion facts) costs one row read. Uniqueness stays
    /// the database's: a trigger skips an insert whose key is stored (as the inserts' `ON CONFLICT
    /// DO NOTHING` did; every insert of these tables is one), and refuses an update onto a stored
    /// key.
    ///
    /// SQLite cannot drop a table's `UNIQUE` constraint, so both tables are rebuilt from their
    /// stored definitions without it (every column later migrations added kept), rows and ids as
    /// they are, their other indexes and triggers recreated.
    static func shortKeyIndexes(_ session: any SQLSession) throws {
        guard session.dialect == .sqlite else {
            try session.execute(LedgerKeys.postgresConstraints)
            return
        }
        let notifications = try storedTable("notifications", session)
        let facts = try storedTable("facts", session)
        let dependents = try session.values(
            """
            SELECT sql FROM sqlite_master
            WHERE tbl_name IN ('facts', 'notifications') AND type IN ('index', 'trigger') AND sql IS NOT NULL
            """, as: String.self)
        try session.execute(
            try rebuilt(notifications, as: "notifications_keyed", removing: #"notification_uuid\s+TEXT\s+UNIQUE"#, keeping: "notification_uuid TEXT"))
        try session.execute("INSERT INTO notifications_keyed SELECT * FROM notifications")
        // References the copy, which takes the table's name below: SQLite renames the reference with it.
        let factsDefinition = try rebuilt(facts, as: "facts_keyed", removing: #",\s*UNIQUE\s*\(\s*kind\s*,\s*jws_sha256\s*\)"#, keeping: "")
        try session.execute(
            try rebuilt(factsDefinition, as: "facts_keyed", removing: #"REFERENCES\s+"?notifications"?\s*\("#, keeping: "REFERENCES notifications_keyed ("))
        try session.execute("INSERT INTO facts_keyed SELECT * FROM facts")
        try session.execute("DROP TABLE facts")
        try session.execute("DROP TABLE notifications")
        try session.execute("ALTER TABLE notifications_keyed RENAME TO notifications")
        try session.execute("ALTER TABLE facts_keyed RENAME TO facts")
        for sql in dependents { try session.execute(sql) }
        try session.execute(LedgerKeys.sqliteIndexes)
    }

    private static func storedTable(_ name: String, _ session: any SQLSession) throws -> String {
        guard let sql = try session.value("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = \(name)", as: String.self) else {
            throw StorageError(.internal, "the table \(name) is missing")
        }
        return sql
    }

    /// `create` (a stored `CREATE TABLE`) for a table named `name`, with the one match of
    /// `pattern` replaced by `replacement`.
    /// - Throws: when `pattern` does not match exactly once (a definition this migration does not know).
    static func rebuilt(_ create: String, as name: String, removing pattern: String, keeping replacement: String) throws -> String {
        var text = create
        let matches = text.matches(of: try Regex(pattern))
        guard matches.count == 1 else { throw StorageError(.internal, "unexpected table definition", detail: create) }
        text.replaceSubrange(matches[0].range, with: replacement)
        guard let open = text.firstIndex(of: "(") else { throw StorageError(.internal, "unexpected table definition", detail: create) }
        return "CREATE TABLE \(name) " + text[open...]
    }
}

/// How the ledger's unique keys are found and kept unique: a fact by its kind and key, a message by
/// its UUID. On PostgreSQL an exclusion constraint through a hash index does both; on SQLite short
/// indexes and triggers do (``Schema/shortKeyIndexes(_:)``), and every lookup names the short key so that SQLite uses
/// its index. The whole key is compared as `+column`: SQLite would otherwise put the compared value
/// in place of the column in the short key's term (constant propagation), which then names no
/// indexed expression, and scan the table.
enum LedgerKeys {
    /// SQLite: the short indexes and the triggers that keep the keys unique, as version 43 makes
    /// them (version 44 replaces the facts' triggers with ones that read kinds from codes:
    /// ``Schema/factCodes(_:)``).
    static let sqliteIndexes = """
        CREATE INDEX facts_key ON facts (substr(jws_sha256, 1, 4));
        CREATE TRIGGER facts_key_insert BEFORE INSERT ON facts
        WHEN EXISTS (SELECT 1 FROM facts WHERE substr(jws_sha256, 1, 4) = substr(NEW.jws_sha256, 1, 4)
                     AND +jws_sha256 = NEW.jws_sha256 AND kind = NEW.kind)
        BEGIN SELECT RAISE(IGNORE); END;
        CREATE TRIGGER facts_key_update BEFORE UPDATE OF kind, jws_sha256 ON facts
        WHEN EXISTS (SELECT 1 FROM facts WHERE substr(jws_sha256, 1, 4) = substr(NEW.jws_sha256, 1, 4)
                     AND +jws_sha256 = NEW.jws_sha256 AND kind = NEW.kind AND id <> NEW.id)
        BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: facts.kind, facts.jws_sha256'); END;
        CREATE INDEX notifications_uuid ON notifications (substr(notification_uuid, -8)) WHERE notification_uuid IS NOT NULL;
        CREATE TRIGGER notifications_uuid_insert BEFORE INSERT ON notifications
        WHEN NEW.notification_uuid IS NOT NULL AND EXISTS (
            SELECT 1 FROM notifications WHERE substr(notification_uuid, -8) = substr(NEW.notification_uuid, -8)
            AND notification_uuid IS NOT NULL AND +notification_uuid = NEW.notification_uuid)
        BEGIN SELECT RAISE(IGNORE); END;
        CREATE TRIGGER notifications_uuid_update BEFORE UPDATE OF notification_uuid ON notifications
        WHEN NEW.notification_uuid IS NOT NULL AND EXISTS (
            SELECT 1 FROM notifications WHERE substr(notification_uuid, -8) = substr(NEW.notification_uuid, -8)
            AND notification_uuid IS NOT NULL AND +notification_uuid = NEW.notification_uuid AND id <> NEW.id)
        BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: notifications.notification_uuid'); END;
        """

    /// PostgreSQL: the unique constraints replaced by exclusion constraints through hash
    /// indexes. A hash index has one column, so a fact's is its kind and key as one text, as a
    /// reference names it (``FactRow/referenceKey``; no kind has a space).
    static let postgresConstraints = """
        ALTER TABLE facts DROP CONSTRAINT facts_kind_jws_sha256_key;
        ALTER TABLE facts ADD CONSTRAINT facts_key EXCLUDE USING hash ((\(postgresFactKey)) WITH =);
        ALTER TABLE notifications DROP CONSTRAINT notifications_notification_uuid_key;
        ALTER TABLE notifications ADD CONSTRAINT notifications_uuid EXCLUDE USING hash (notification_uuid WITH =);
        """
    private static let postgresFactKey = "kind || ' ' || encode(jws_sha256, 'hex')"

    /// The condition that finds the fact of `kind` stored under `key` (``FactDigest/stored(_:)``),
    /// on the table's own columns (no alias).
    static func fact(kind: String, key: [UInt8], dialect: SQLDialect) -> SQLQuery {
        switch dialect {
        case .sqlite: "substr(jws_sha256, 1, 4) = substr(\(key), 1, 4) AND +jws_sha256 = \(key) AND kind = \(kind)"
        case .postgres:
            "\(SQLQuery(verbatim: postgresFactKey)) = \(kind + " " + Hex.encode(key)) AND kind = \(kind) AND jws_sha256 = \(key)"
        }
    }

    /// The condition that finds the message with `uuid`.
    static func notification(uuid: String, dialect: SQLDialect) -> SQLQuery {
        switch dialect {
        case .sqlite: "substr(notification_uuid, -8) = substr(\(uuid), -8) AND notification_uuid IS NOT NULL AND +notification_uuid = \(uuid)"
        case .postgres: "notification_uuid = \(uuid)"
        }
    }
}
