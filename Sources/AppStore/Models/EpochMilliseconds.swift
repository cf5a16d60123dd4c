import Foundation
import JSONCoding

/// A date field in epoch milliseconds, as Apple's signed payloads carry them.
///
/// StoreKit in Xcode writes fractional milliseconds (`1697679936049.7297`); those are floored to whole
/// milliseconds so every source yields the same `Int64`. A string or other non-number is still an error.
/// Absent and `null` both read as nil, and nil is omitted when encoding.
@propertyWrapper
public struct EpochMilliseconds: Hashable, Sendable, Codable {
    public var wrappedValue: Int64?

    public init(wrappedValue: Int64?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        if let tape = decoder as? TapeDecoder {
            if tape.node(tape.current).kind == .null {
                wrappedValue = nil
                return
            }
            if let milliseconds = tape.tape.flooredMilliseconds(at: tape.current) {
                wrappedValue = milliseconds
                return
            }
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            wrappedValue = nil
            return
        }
        wrappedValue = try Self.decodeMilliseconds(from: container)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(wrappedValue)
        } else {
            try container.encodeNil()
        }
    }

    /// Reads a whole or fractional JSON number as whole epoch milliseconds (floored).
    ///
    /// Decoded through `Decimal`, which keeps the exact digits: Foundation's Double (and Int64) parsing can
    /// round `1697679936049.9999` up to a whole `…050` before any flooring could happen.
    static func decodeMilliseconds(from container: any SingleValueDecodingContainer) throws -> Int64 {
        guard let exact = try? container.decode(Decimal.self) else {
            // Not a number: let the Int64 decode report the mismatch in its own words.
            return try container.decode(Int64.self)
        }
        guard let milliseconds = floored(exact) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Date \(exact) is out of range for epoch milliseconds")
        }
        return milliseconds
    }

    /// The JSON number `text` as whole epoch milliseconds, floored as a decoded date is; nil when it is
    /// not a number or out of range.
    public static func floored(_ text: String) -> Int64? {
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).flatMap(floored)
    }

    private static func floored(_ exact: Decimal) -> Int64? {
        var exact = exact
        var floored = Decimal()
        NSDecimalRound(&floored, &exact, 0, .down)
        return Int64(floored.description)
    }
}

extension KeyedDecodingContainer {
    /// Lets synthesized `Decodable` treat a missing date key as nil instead of an error.
    public func decode(_ type: EpochMilliseconds.Type, forKey key: Key) throws -> EpochMilliseconds {
        try decodeIfPresent(type, forKey: key) ?? EpochMilliseconds(wrappedValue: nil)
    }
}

extension KeyedEncodingContainer {
    /// Lets synthesized `Encodable` omit a nil date rather than write `null`.
    public mutating func encode(_ value: EpochMilliseconds, forKey key: Key) throws {
        if let milliseconds = value.wrappedValue {
            try encode(milliseconds, forKey: key)
        }
    }
}
