/// Parsing of the string-typed dates, numbers and flags of legacy receipts and V1 notifications.
///
/// Every parser returns nil for input it does not fully understand, so one odd field never hides the rest.
enum LegacyField {
    /// Whole epoch milliseconds, optionally negative; no spaces, fractions or exponents.
    static func milliseconds(_ text: String?) -> Int64? {
        guard let text else { return nil }
        return Int64(text)
    }

    static func int(_ text: String?) -> Int? {
        guard let text else { return nil }
        return Int(text)
    }

    static func int32(_ text: String?) -> Int32? {
        guard let text else { return nil }
        return Int32(text)
    }

    /// `true`/`false` (V1 notifications) or `1`/`0` (receipts).
    static func flag(_ text: String?) -> Bool? {
        switch text {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }
}

/// A legacy field Apple has sent both as a JSON string and as a JSON integer (V1 `expiration_intent`).
///
/// The text is kept exactly as sent; an integer becomes its decimal text. Anything else is a decode error.
public struct LegacyText: Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral value: String) { self.text = value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            text = String(integer)
        } else {
            text = try container.decode(String.self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    public var description: String { text }
}
