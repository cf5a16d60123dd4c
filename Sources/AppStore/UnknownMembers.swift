import Foundation
import JSONCoding

/// A member of a payload's JSON that its model does not read (Apple adds fields every year):
/// its name (dotted inside a nested object: `data.newField`) and its value as received.
public struct UnknownMember: Sendable, Hashable {
    public var name: String
    public var value: RawJSON

    public init(name: String, value: RawJSON) {
        self.name = name
        self.value = value
    }
}

/// The member names a payload's model reads (``KnownKeys``): at its top level, and in the nested
/// objects whose unknown members are reported too (a notification's `data`, `summary`, …).
public struct KnownMembers: Sendable {
    /// The top-level names.
    public var keys: Set<String>
    /// Nested objects by member name, each with the names its model reads; reported in this order.
    public var nested: [(name: String, keys: Set<String>)]

    /// The names `Model` reads, and those of each nested model in `nested`.
    public init<Model: Decodable>(_ model: Model.Type, nested: [(name: String, model: any Decodable.Type)] = []) {
        keys = KnownKeys.of(model)
        self.nested = nested.map { part in
            let model: any Decodable.Type = part.model
            return (part.name, KnownKeys.of(model))
        }
    }

    /// The unknown members of a decoded object's `members`: the top level's by name, then each
    /// nested object's by name.
    public func unknown(in members: [String: RawJSON]) -> [UnknownMember] {
        var found = Self.unknown(members, known: keys, prefix: "")
        for part in nested {
            if case .object(let inner)? = members[part.name] { found += Self.unknown(inner, known: part.keys, prefix: part.name + ".") }
        }
        return found
    }

    static func unknown(_ members: [String: RawJSON], known: Set<String>, prefix: String) -> [UnknownMember] {
        members.keys.sorted().filter { !known.contains($0) }.map { UnknownMember(name: prefix + $0, value: members[$0]!) }
    }
}

/// A payload type whose unknown members the verifier reports (``VerifiedPayload/unknownMembers``).
public protocol ReportsUnknownMembers: Decodable {
    /// The names its model reads (a stored constant: computing them runs the model's decoder).
    static var knownMembers: KnownMembers { get }
}

extension ResponseBodyV2DecodedPayload: ReportsUnknownMembers {
    public static let knownMembers = KnownMembers(
        Self.self,
        nested: [
            ("data", NotificationData.self), ("summary", Summary.self), ("externalPurchaseToken", ExternalPurchaseToken.self),
            ("appData", AppData.self),
        ])
}

extension JWSTransactionDecodedPayload: ReportsUnknownMembers {
    public static let knownMembers = KnownMembers(Self.self)
}

extension JWSRenewalInfoDecodedPayload: ReportsUnknownMembers {
    public static let knownMembers = KnownMembers(Self.self)
}

extension JSONCodec {
    /// Decodes `type` and reports the members of the same JSON its model does not read: with the
    /// fast paths, from the one parse the value came from; otherwise (or when the fast reader
    /// hands the document to Foundation) from Foundation's `[String: RawJSON]` of it.
    public func decodeReportingUnknown<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], known: KnownMembers
    ) throws -> (value: T, unknown: [UnknownMember]) {
        if fastPaths, let (value, tape) = TapeJSONDecoder.decodeKeepingTape(type, from: bytes),
            let unknown = tape.unknownMembers(known)
        {
            return (value, unknown)
        }
        let value = try decode(type, from: bytes)
        return (value, unknownMembers(in: bytes, known: known))
    }

    /// The members of the JSON object `bytes` that `known` does not name; none when it is no object.
    public func unknownMembers(in bytes: [UInt8], known: KnownMembers) -> [UnknownMember] {
        if fastPaths, let tape = JSONTape(parsing: bytes), let unknown = tape.unknownMembers(known) { return unknown }
        guard let members = try? Self.decoder.decode([String: RawJSON].self, from: Data(bytes)) else { return [] }
        return known.unknown(in: members)
    }
}

extension JSONTape {
    /// The members of the root object that `known` does not name, as ``KnownMembers/unknown(in:)``
    /// lists them; nil when a value needs Foundation (a fraction, an escaped key, …).
    func unknownMembers(_ known: KnownMembers) -> [UnknownMember]? {
        guard nodes.first?.kind == .object else { return [] }
        let decoder = TapeDecoder(tape: self)
        func unknown(in object: Int, known: Set<String>, prefix: String) throws -> [UnknownMember] {
            var found: [UnknownMember] = []
            let end = Int(nodes[object].end)
            var key = object + 1
            while key < end {
                let name = try decoder.string(at: key)
                if !known.contains(name) { found.append(UnknownMember(name: prefix + name, value: try decoder.rawJSON(at: key + 1))) }
                key = after(key + 1)
            }
            return found.sorted { $0.name < $1.name }
        }
        do {
            var found = try unknown(in: 0, known: known.keys, prefix: "")
            for part in known.nested {
                var hint = 0
                if let value = member(part.name, of: 0, hint: &hint), nodes[value].kind == .object {
                    found += try unknown(in: value, known: part.keys, prefix: part.name + ".")
                }
            }
            return found
        } catch {
            return nil
        }
    }
}
