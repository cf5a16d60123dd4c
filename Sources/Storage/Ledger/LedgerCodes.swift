import Entitlements

/// One-byte codes for the words every fact row repeats: its kind and its environment.
///
/// A code is the word's index in its list plus one. The lists are frozen at schema version 44:
/// SQLite's `facts.kind` and `facts.environment` are computed from the stored codes by the table's
/// own definition (``Schema/factCodes(_:)``), and packed texts refer to a sibling fact by its
/// kind's code (``SignedTextFormat``); a word not listed (a kind added later, an environment
/// nobody expected) is stored as it is.
enum LedgerCodes {
    static let kinds = [
        "transaction", "renewal", "notification", "appTransaction", "receipt", "pendingRenewal", "v1Notification",
        Fact.consumableSpendKind, Fact.promotionalGrantKind, Fact.promotionalGrantEndKind, "playSubscription", "playProduct",
        "playVoided", "playOrder",
    ]
    static let environments = ["Production", "Sandbox", "Xcode", "LocalTesting"]

    /// `word`'s code in `words`, nil when it has none.
    static func code(_ word: String, in words: [String]) -> UInt8? {
        words.firstIndex(of: word).map { UInt8($0 + 1) }
    }

    /// The word of `code` in `words`, nil for a code it does not have.
    static func word(_ code: UInt64, in words: [String]) -> String? {
        code >= 1 && code <= UInt64(words.count) ? words[Int(code - 1)] : nil
    }

    /// The value a fact row stores for `word`. SQLite: its code as a one-byte blob (no text
    /// equals a blob, so a code is never mistaken for a word), or the word itself; PostgreSQL: the
    /// word.
    static func value(_ word: String?, in words: [String], dialect: SQLDialect) -> SQLQuery {
        guard dialect == .sqlite, let word, let code = code(word, in: words) else { return "\(word)" }
        return "\([code])"
    }

    /// The column a fact row stores `name` (`kind`, `environment`) in: on SQLite `name_code`, from
    /// which `name` is computed.
    static func column(_ name: String, dialect: SQLDialect) -> SQLQuery {
        SQLQuery(verbatim: dialect == .sqlite ? name + "_code" : name)
    }

    /// SQLite: the word that `value` (an expression over a stored value) stands for.
    static func sqliteWord(of value: String, in words: [String]) -> String {
        "CASE \(value) " + words.indices.map { "WHEN x'0\(String($0 + 1, radix: 16))' THEN '\(words[$0])'" }.joined(separator: " ")
            + " ELSE \(value) END"
    }
}
