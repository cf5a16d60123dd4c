import Synchronization

/// The customers' stored answers held in memory, so that a read of an unchanged database reads no
/// customer row: the customer read serves the whole answer, the offerings read its head
/// (``RenderedCustomer/Head``), both read and checked once, when the answer is held.
///
/// Each answer is held with the store's change mark (``Storage/LedgerStore/changeMarkNow()``) read
/// just before the row it came from, and is served only while the store answers that same mark.
/// Every commit to the database moves the mark, whoever makes it: this server's writes (an
/// ingest, a grant, a spend, attributes, an answer rendered and stored, a merge or an erasure),
/// another process's (`entitled import`, `rebuild`, `migrate`, `reconcile`, another server on the same file)
/// or any other connection's. A moved mark drops every answer held, so nothing needs invalidating
/// per write and no write path can be forgotten: an answer is served only if no transaction
/// committed since its row was read. A store without marks (PostgreSQL, which several servers
/// write; SQLite in memory) holds nothing and every read is the store's.
///
/// What time changes is checked on every read, as for a stored answer: the head's
/// `nextChangeAt` and a clock gone back before its `computedAt`.
final class HeldAnswers: Sendable {
    /// A customer's stored answer, read and checked once, and the `now` it was computed with.
    struct Held: Sendable {
        let rendered: RenderedCustomer
        let computedAt: Int64

        /// What holding it costs, for the budget: its bytes and a bound on the rest.
        var size: Int { rendered.byteCount + 256 }
    }

    /// The answers read at `mark`, by the customer id they were asked for.
    private struct Answers {
        var mark: Int64?
        var byCustomer: [String: Held] = [:]
        var size = 0
    }

    private let answers = Mutex(Answers())
    /// At most this many bytes of answers are held (``Held/size``).
    private let budget: Int

    /// The default budget: 256 MiB, about 130,000 answers of one subscription each.
    static let defaultBudget = 256 << 20

    init(budget: Int = HeldAnswers.defaultBudget) { self.budget = budget }

    /// How many answers are held.
    var count: Int { answers.withLock { $0.byCustomer.count } }

    /// The answer held for `appUserId`, when it was read at `mark`.
    func held(appUserId: String, mark: Int64) -> Held? {
        answers.withLock { $0.mark == mark ? $0.byCustomer[appUserId] : nil }
    }

    /// Holds `held`, read from the store after it answered `mark`; answers of another mark go.
    func hold(_ held: Held, appUserId: String, mark: Int64) {
        guard held.size <= budget else { return }
        answers.withLock { answers in
            if answers.mark != mark { answers = Answers(mark: mark) }
            if let old = answers.byCustomer.removeValue(forKey: appUserId) { answers.size -= old.size }
            // Full: every answer goes, as at a new mark, and each is read again when asked for
            // (dropping one at a time would scan the dictionary for one to drop at every hold).
            if answers.size + held.size > budget { answers = Answers(mark: mark) }
            answers.byCustomer[appUserId] = held
            answers.size += held.size
        }
    }
}
