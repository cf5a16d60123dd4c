extension Schema {
    /// SQLite: `customer_states` rebuilt as an ordinary (rowid) table, its primary key then a
    /// separate narrow index.
    ///
    /// A `WITHOUT ROWID` table is a B-tree of whole rows, interior pages included. A customer's
    /// row (state, projection rows, rendered answer) is several KB, far above the ~1 KB a 4 KB
    /// page keeps in a cell, so every comparison on the way down to a row read the entire row
    /// through its overflow pages: a customer read copied tens of KB and spent about a third of
    /// its CPU there. In a rowid table the lookup descends the index of `app_user_id` alone, then
    /// the table by integer key, and reads the one row it returns.
    ///
    /// Built from the table's own stored definition (with every column later migrations added)
    /// and its indexes and triggers, so that it keeps whatever the schema holds at this version.
    static func rowidCustomerStates(_ session: any SQLSession) throws {
        guard
            let create = try session.value(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'customer_states'", as: String.self),
            let definition = rowidDefinition(create, as: "customer_states_rowid")
        else { return }
        let dependents = try session.values(
            """
            SELECT sql FROM sqlite_master
            WHERE tbl_name = 'customer_states' AND type IN ('index', 'trigger') AND sql IS NOT NULL
            """, as: String.self)
        try session.execute(definition)
        try session.execute("INSERT INTO customer_states_rowid SELECT * FROM customer_states")
        try session.execute("DROP TABLE customer_states")
        try session.execute("ALTER TABLE customer_states_rowid RENAME TO customer_states")
        for sql in dependents { try session.execute(sql) }
    }

    /// `create` (a stored `CREATE TABLE t (…) WITHOUT ROWID`) for a table named `name`
    /// without the clause; nil when it has no such clause (already a rowid table).
    static func rowidDefinition(_ create: String, as name: String) -> String? {
        var text = Substring(create)
        while let last = text.last, last.isWhitespace || last == ";" { text.removeLast() }
        let clause = "WITHOUT ROWID"
        guard text.uppercased().hasSuffix(clause) else { return nil }
        text.removeLast(clause.count)
        guard let open = text.firstIndex(of: "(") else { return nil }
        return "CREATE TABLE \(name) " + text[open...]
    }
}
