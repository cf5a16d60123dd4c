import Synchronization

/// The offerings read's customer answer heads (``RenderedCustomer/Head``) held in memory, so that
/// a read of an unchanged database reads no customer row.
///
/// Each head is held with the store's change mark (``Storage/LedgerStore/changeMarkNow()``) read
/// just before the row it came from, and is served only while the store answers that same mark.
/// Every commit to the database moves the mark, whoever makes it: this server's writes (an
/// ingest, a grant, a spend, attributes, an answer rendered and stored, a merge or an erasure),
/// another process's (`entitled import`, `rebuild`, `migrate`, `reconcile`, another server on the same file)
/// or any other connection's. A moved mark drops every head held, so nothing needs invalidating
/// per write and no write path can be forgotten: a head is served only if no transaction
/// committed since its row was read. A store without marks (PostgreSQL, which several servers
/// write; SQLite in memory) holds nothing and every read is the store's.
///
/// What time changes is checked on every read, as for a stored answer: the head's
/// `nextChangeAt` and a clock gone back before its `computedAt`.
final class HeldHeads: Sendable {
    /// A customer's head and the `now` their stored answer was computed with.
    struct Held: Sendable {
        let head: RenderedCustomer.Head
        let computedAt: Int64
    }

    /// The heads read at `mark`, by the customer id they were asked for.
    private struct Heads {
        var mark: Int64?
        var byCustomer: [String: Held] = [:]
    }

    private let heads = Mutex(Heads())
    /// At most this many customers' heads are held.
    private let limit: Int

    init(limit: Int = 100_000) { self.limit = limit }

    /// How many heads are held.
    var count: Int { heads.withLock { $0.byCustomer.count } }

    /// The head held for `appUserId`, when it was read at `mark`.
    func held(appUserId: String, mark: Int64) -> Held? {
        heads.withLock { $0.mark == mark ? $0.byCustomer[appUserId] : nil }
    }

    /// Holds `held`, read from the store after it answered `mark`; heads of another mark go.
    func hold(_ held: Held, appUserId: String, mark: Int64) {
        heads.withLock { heads in
            if heads.mark != mark { heads = Heads(mark: mark) }
            // Full: drop an arbitrary head (hash order); it is read again when asked for.
            if heads.byCustomer.count >= limit, heads.byCustomer[appUserId] == nil {
                heads.byCustomer.remove(at: heads.byCustomer.startIndex)
            }
            heads.byCustomer[appUserId] = held
        }
    }
}
