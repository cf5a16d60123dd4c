import Foundation
import HTTPServer
import Storage

/// The rules of customer attributes and their writes: names, values and bounds, checked before
/// anything is stored. Knows no request, only the JSON body.
enum CustomerAttributes {
    /// The names with a meaning to the server (targeting reads `$appVersion`, `$locale` and
    /// `$storefront`); every other name starting with `$` is refused.
    static let reserved: Set<String> = ["$email", "$displayName", "$appVersion", "$locale", "$storefront"]
    /// The most attributes one customer has.
    static let maxCount = 50
    /// The longest value, in UTF-8 bytes.
    static let maxValueBytes = 500
    /// The largest request body.
    static let maxBodyBytes = 64 * 1024

    /// Whether `name` is reserved or a custom name (`[a-z0-9_]{1,40}`).
    static func isValidName(_ name: String) -> Bool {
        if reserved.contains(name) { return true }
        let bytes = Array(name.utf8)
        return (1...40).contains(bytes.count)
            && bytes.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// The changes a body `{"attributes": {"name": "value" | null}}` asks for (nil or "" removes),
    /// each name and value checked; `$storefront` is stored uppercased.
    static func changes(body: [UInt8]) throws -> [String: String?] {
        guard body.count <= maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: maxBodyBytes) }
        try RequestInput.checkDepth(body)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let attributes = object["attributes"] as? [String: Any]
        else { throw HTTPError(.invalidAttribute, #"the body must be {"attributes": {"name": "value"}}"#) }
        guard attributes.count <= maxCount else {
            throw HTTPError(.tooManyAttributes, "at most \(maxCount) attributes per customer")
        }
        var changes: [String: String?] = [:]
        for (name, raw) in attributes {
            guard isValidName(name) else {
                throw HTTPError(
                    .invalidAttribute,
                    "\(name.prefix(50)): a name is one of \(reserved.sorted().joined(separator: ", ")) or [a-z0-9_]{1,40}")
            }
            if raw is NSNull {
                changes[name] = .some(nil)
                continue
            }
            guard let value = raw as? String else { throw HTTPError(.invalidAttribute, "\(name): the value must be a string or null") }
            changes[name] = .some(try checked(name: name, value: value))
        }
        return changes
    }

    /// `value` as stored for `name` (nil: removed).
    static func checked(name: String, value: String) throws -> String? {
        if value.isEmpty { return nil }
        guard value.utf8.count <= maxValueBytes else {
            throw HTTPError(.invalidAttribute, "\(name): the value is longer than \(maxValueBytes) bytes")
        }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw HTTPError(.invalidAttribute, "\(name): the value holds control characters")
        }
        if name == "$storefront" {
            guard value.count == 3, value.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                throw HTTPError(.invalidAttribute, "$storefront must be an ISO 3166-1 alpha-3 code")
            }
            return value.uppercased()
        }
        return value
    }
}

/// A customer's attributes as the attribute endpoints answer them.
struct AttributesBody: Encodable {
    var appUserId: String
    var attributes: [CustomerAttribute]

    struct Entry: Encodable {
        var value: String
        var updatedAt: String
    }

    enum Key: String, CodingKey { case appUserId, attributes }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(appUserId, forKey: .appUserId)
        try c.encode(
            Dictionary(uniqueKeysWithValues: attributes.map { ($0.name, Entry(value: $0.value, updatedAt: ISO8601.format(milliseconds: $0.updatedAt))) }),
            forKey: .attributes)
    }
}
