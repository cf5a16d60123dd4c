/// How a PostgreSQL transaction writes its share of the hot rows (``TransactionTail``) and commits.
///
/// Batched (the default): the tail's statements (a rollup's rows in multi-row upserts, in the
/// lock order), the outbox appends and `COMMIT`, all in one pipeline: one round trip in which the
/// server takes the shared row locks and releases them at the commit, never waiting on this
/// client in between.
///
/// Plain: the same statements one round trip each, then `COMMIT` in a round trip of its own (what
/// the differential tests compare the batched path with).
enum PostgresTail {
    case batched
    case plain

    /// The tail's statements and the commit, sent on `session` (the tail is emptied).
    func commit(_ tail: TransactionTail, on session: PostgresConnection) throws {
        switch self {
        case .plain:
            try tail.flush(session)
            try session.execute("COMMIT")
        case .batched:
            let statements = tail.statements(dialect: .postgres).map { SQLStatement($0.text(for: .postgres), parameters: $0.binds) }
            _ = try session.pipeline(statements + [SQLStatement("COMMIT")])
        }
    }
}
