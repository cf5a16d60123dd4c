extension Schema {
    /// SQLite: a fact row's kind and environment stored as one-byte codes (``LedgerCodes``), not
    /// as words repeated in every row (`transaction`, `Production`: ~20 bytes a row).
    ///
    /// The stored columns become `kind_code` and `environment_code`; `kind` and `environment` are
    /// virtual columns computed from them by the table's definition (stored nowhere), so every query
    /// reads and filters them as before. A row holds a code (a one-byte blob) or, for a word without
    /// one, the word: rows written before keep their words and read the same, without a rewrite.
    /// The key's trigger compares the computed kinds, whichever way each row stores its own.
    /// PostgreSQL keeps the words (it has no virtual columns before version 18); on both, packed
    /// texts written from this version on may name a sibling by its kind's code
    /// (``SignedTextFormat``), which older binaries do not read.
    static func factCodes(_ session: any SQLSession) throws {
        guard session.dialect == .sqlite else { return }
        let kind = LedgerCodes.sqliteWord(of: "kind_code", in: LedgerCodes.kinds)
        let environment = LedgerCodes.sqliteWord(of: "environment_code", in: LedgerCodes.environments)
        let newKind = LedgerCodes.sqliteWord(of: "NEW.kind_code", in: LedgerCodes.kinds)
        try session.execute(
            """
            DROP TRIGGER facts_key_insert;
            DROP TRIGGER facts_key_update;
            ALTER TABLE facts RENAME COLUMN kind TO kind_code;
            ALTER TABLE facts RENAME COLUMN environment TO environment_code;
            ALTER TABLE facts ADD COLUMN kind TEXT GENERATED ALWAYS AS (\(kind)) VIRTUAL;
            ALTER TABLE facts ADD COLUMN environment TEXT GENERATED ALWAYS AS (\(environment)) VIRTUAL;
            CREATE TRIGGER facts_key_insert BEFORE INSERT ON facts
            WHEN EXISTS (SELECT 1 FROM facts WHERE substr(jws_sha256, 1, 4) = substr(NEW.jws_sha256, 1, 4)
                         AND +jws_sha256 = NEW.jws_sha256 AND kind = \(newKind))
            BEGIN SELECT RAISE(IGNORE); END;
            CREATE TRIGGER facts_key_update BEFORE UPDATE OF kind_code, jws_sha256 ON facts
            WHEN EXISTS (SELECT 1 FROM facts WHERE substr(jws_sha256, 1, 4) = substr(NEW.jws_sha256, 1, 4)
                         AND +jws_sha256 = NEW.jws_sha256 AND kind = \(newKind) AND id <> NEW.id)
            BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: facts.kind, facts.jws_sha256'); END;
            """)
    }
}
