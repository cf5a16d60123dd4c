extension Schema {
    /// The version from which stored JSON is compressed (``CompressedText``).
    static let compressedJSONVersion = 16

    /// Version 16: the ledger's JSON compressed with a dictionary (``CompressedText``): a fact's
    /// JSON moves to `payload_packed`, and its signed text's literals are compressed with it
    /// (version 16 wrote ``SignedTextFormat`` format 2; the rewrite now writes the current
    /// layout). Rows written before are rewritten afterwards in resumable batches
    /// (`repack_progress` phase `compress facts`, ``Ledger/RepackPhase``), outside this
    /// transaction, like version 14's; until then they are read as they are.
    static let compressedJSON = Migration(
        version: compressedJSONVersion, name: "compressed ledger JSON",
        sql: """
            ALTER TABLE facts ADD COLUMN payload_packed {blob};
            INSERT INTO repack_progress (phase, after_id, done)
            SELECT 'compress facts', 0, CASE WHEN EXISTS (SELECT 1 FROM facts) THEN 0 ELSE 1 END;
            """)
}
