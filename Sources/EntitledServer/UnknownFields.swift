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

    static let notificationKeys = KnownKeys.of(ResponseBodyV2DecodedPayload.self)
    static let transactionKeys = KnownKeys.of(JWSTransactionDecodedPayload.self)
    static let renewalKeys = KnownKeys.of(JWSRenewalInfoDecodedPayload.self)
    /// The notification's nested objects, each with the members its model knows.
    static let notificationParts: [(name: String, keys: Set<String>)] = [
        ("data", KnownKeys.of(NotificationData.self)), ("summary", KnownKeys.of(Summary.self)),
        ("externalPurchaseToken", KnownKeys.of(ExternalPurchaseToken.self)), ("appData", KnownKeys.of(AppData.self)),
    ]

    /// The unknown members of one decoded payload object, `prefix`ed, raw and bounded.
    static func unknown(_ members: [String: RawJSON], known: Set<String>, prefix: String = "") -> [(String, String)] {
        members.keys.sorted().filter { !known.contains($0) }.map { name in
            (String((prefix + name).prefix(maxNameLength)), raw(members[name]!))
        }
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

    /// Everything unknown in a notification's payload: its top level and its nested objects.
    static func ofNotification(_ jws: String, codec: JSONCodec) -> [(String, String)] {
        guard let members = JWSPeek.payload([String: RawJSON].self, jws, codec: codec) else { return [] }
        return inNotification(members)
    }

    /// The unknown members of a decoded notification payload's members.
    static func inNotification(_ members: [String: RawJSON]) -> [(String, String)] {
        var found = unknown(members, known: notificationKeys)
        for part in notificationParts {
            if case .object(let nested)? = members[part.name] {
                found += unknown(nested, known: part.keys, prefix: part.name + ".")
            }
        }
        return found
    }

    /// The unknown members of a signed transaction or renewal info.
    static func of(_ jws: String?, known: Set<String>, codec: JSONCodec) -> [(String, String)] {
        guard let jws, let members = JWSPeek.payload([String: RawJSON].self, jws, codec: codec) else { return [] }
        return unknown(members, known: known)
    }

    /// `facts` with the unknown members of the signed texts they came from recorded on them
    /// (`unknownFields`, at most ``maxFields`` each), and every unknown member seen.
    static func annotate(
        _ facts: [(fact: Fact, signed: String?)], codec: JSONCodec
    ) -> (facts: [(fact: Fact, signed: String?)], seen: [Seen]) {
        var seen: [Seen] = []
        func record(_ found: [(String, String)], kind: String) -> [String: String]? {
            guard !found.isEmpty else { return nil }
            seen += found.map { Seen(kind: kind, field: $0.0) }
            return Dictionary(found.prefix(maxFields).map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        }
        let annotated = facts.map { item -> (fact: Fact, signed: String?) in
            switch item.fact {
            case .notification(var f):
                guard let signed = item.signed else { return item }
                f.unknownFields = record(ofNotification(signed, codec: codec), kind: "notification")
                return (.notification(f), item.signed)
            case .transaction(var f):
                f.unknownFields = record(of(item.signed, known: transactionKeys, codec: codec), kind: "transaction")
                return (.transaction(f), item.signed)
            case .renewalInfo(var f):
                f.unknownFields = record(of(item.signed, known: renewalKeys, codec: codec), kind: "renewalInfo")
                return (.renewalInfo(f), item.signed)
            default:
                return item
            }
        }
        return (annotated, seen)
    }
}
