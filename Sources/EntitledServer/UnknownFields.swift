import AppStore
import Entitlements
import HTTPServer

/// Members of Apple's signed payloads that this build does not know (Apple adds fields every
/// year). A payload with one is never refused: the member is recorded on the fact with its raw
/// value, bounded, and counted (`entitled_unknown_apple_values_total{kind, field}`); the engine
/// reads none of them, so the answer is unchanged.
enum UnknownFields {
    /// At most this many members are recorded per payload part (the rest are counted only).
    static let maxFields = 16
    /// Longer names are cut to this many characters.
    static let maxNameLength = 64
    /// A raw value longer than this many bytes of JSON is cut (at a character boundary) and marked `…`.
    static let maxValueBytes = 1024

    /// One unknown member seen: which payload (`notification`, `transaction`, `renewalInfo`) and
    /// its name (dotted inside a notification: `data.newField`).
    struct Seen: Hashable, Sendable {
        var kind: String
        var field: String
    }

    /// A value as compact JSON, at most ``maxValueBytes`` bytes.
    static func raw(_ value: RawJSON) -> String {
        let text = (try? AppStoreJSON.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        guard text.utf8.count > maxValueBytes else { return text }
        var cut = ""
        for character in text {
            guard cut.utf8.count + character.utf8.count <= maxValueBytes else { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// `facts` with the unknown members of the signed texts they came from (as the verifier's
    /// decode found them) recorded on them (`unknownFields`, at most ``maxFields`` each, names cut
    /// to ``maxNameLength``, values to ``maxValueBytes``), and every unknown member seen.
    static func annotate(
        _ facts: [(fact: Fact, signed: String?, unknown: [UnknownMember])]
    ) -> (facts: [(fact: Fact, signed: String?)], seen: [Seen]) {
        var seen: [Seen] = []
        func record(_ members: [UnknownMember], kind: String) -> [String: String]? {
            guard !members.isEmpty else { return nil }
            let found = members.map { (String($0.name.prefix(maxNameLength)), $0) }
            seen += found.map { Seen(kind: kind, field: $0.0) }
            return Dictionary(found.prefix(maxFields).map { ($0.0, raw($0.1.value)) }, uniquingKeysWith: { first, _ in first })
        }
        let annotated = facts.map { item -> (fact: Fact, signed: String?) in
            switch item.fact {
            case .notification(var f):
                f.unknownFields = record(item.unknown, kind: "notification")
                return (.notification(f), item.signed)
            case .transaction(var f):
                f.unknownFields = record(item.unknown, kind: "transaction")
                return (.transaction(f), item.signed)
            case .renewalInfo(var f):
                f.unknownFields = record(item.unknown, kind: "renewalInfo")
                return (.renewalInfo(f), item.signed)
            default:
                return (item.fact, item.signed)
            }
        }
        return (annotated, seen)
    }
}
