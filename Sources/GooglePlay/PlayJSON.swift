import AppStore
import JSONCoding
import enum Entitlements.Time
import Foundation

/// Bounded, strict JSON decoding for everything Google sends: the body size and nesting depth are
/// checked before Foundation sees the bytes, and every failure becomes a ``GooglePlayError`` with
/// the caller's code, so no input can crash or exhaust the process.
///
/// Unknown members are ignored (Google adds fields without notice); a known member of the wrong
/// type, or a required one missing, fails.
public enum PlayJSON {
    /// The deepest nesting any Google payload needs (a subscription is about five levels deep).
    public static let depthLimit = 32

    /// Decodes `type` from `bytes` of at most `maxBytes`, failing with `code`.
    public static func decode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], maxBytes: Int, code: GooglePlayError.Code
    ) throws(GooglePlayError) -> T {
        guard bytes.count <= maxBytes else { throw GooglePlayError(code, "body of \(bytes.count) bytes exceeds \(maxBytes)") }
        guard !bytes.isEmpty else { throw GooglePlayError(code, "empty body") }
        guard JSONNestingScan.nestingDepth(of: bytes, limit: depthLimit) != nil else {
            throw GooglePlayError(code, "JSON nested deeper than \(depthLimit)")
        }
        do {
            return try decoder.decode(type, from: Data(bytes))
        } catch let error as GooglePlayError {
            throw GooglePlayError(code, error.message)
        } catch let error as DecodingError {
            throw GooglePlayError(code, describe(error))
        } catch {
            throw GooglePlayError(code, "not JSON")
        }
    }

    /// Encodes `value` with sorted keys (the fake's answers and the client's request bodies).
    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        // Encoding the module's own value types cannot fail: they hold only strings, numbers and bools.
        (try? encoder.encode(value)).map { [UInt8]($0) } ?? []
    }

    /// A path-precise account of a decoding failure, without the offending value.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }.joined()
            return keys.isEmpty ? "$" : "$" + keys
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)).\(key.stringValue) is missing"
        case .typeMismatch(_, let context): return "\(path(context)) has the wrong type"
        case .valueNotFound(_, let context): return "\(path(context)) is null"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription.prefix(200))"
        @unknown default: return "undecodable"
        }
    }

    // Never mutated after creation, so one instance serves every thread.
    static let decoder = JSONDecoder()
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// An RFC 3339 instant as Google's REST APIs write it (`2024-05-01T12:00:00.123456Z`, or with an
/// offset), held as milliseconds since 1970; encoded back in UTC with milliseconds.
public struct GoogleTimestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// Parses RFC 3339 text; nil unless it is a well-formed instant between years 1 and 9999.
    public init?(rfc3339 text: String) {
        guard let value = Self.parse(Array(text.utf8)) else { return nil }
        milliseconds = value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard text.utf8.count <= 64, let value = Self.parse(Array(text.utf8)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 timestamp")
        }
        milliseconds = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (lhs: GoogleTimestamp, rhs: GoogleTimestamp) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`; instants outside years 1 to 9999 print as the nearest end.
    public var description: String {
        let milliseconds = min(max(self.milliseconds, -62_135_596_800_000), 253_402_300_799_999)
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let rest = milliseconds - days * 86_400_000
        let (year, month, day) = Time.civilFromDays(days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3_600_000, 2)):\(pad(rest / 60_000 % 60, 2)):"
            + "\(pad(rest / 1000 % 60, 2)).\(pad(rest % 1000, 3))Z"
    }

    static func parse(_ b: [UInt8]) -> Int64? {
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= b.count else { return nil }
            var value: Int64 = 0
            for index in range {
                guard (48...57).contains(b[index]) else { return nil }
                value = value * 10 + Int64(b[index] - 48)
            }
            return value
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            year >= 1, (1...12).contains(month), day >= 1, day <= Time.daysInMonth(year: year, month: month),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if b[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < b.count, (48...57).contains(b[index]) { index += 1 }
            let digits = index - start
            guard digits >= 1, digits <= 9 else { return nil }
            for offset in 0..<3 { millis = millis * 10 + (offset < digits ? Int64(b[start + offset] - 48) : 0) }
        }
        guard index < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == b.count, b[index + 3] == UInt8(ascii: ":"), let h = number(index + 1..<index + 3),
                let m = number(index + 4..<index + 6), h < 24, m < 60
            else { return nil }
            offsetMinutes = (h * 60 + m) * (b[index] == UInt8(ascii: "+") ? 1 : -1)
            index += 6
        default: return nil
        }
        guard index == b.count else { return nil }
        let days = Time.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetMinutes * 60
        return seconds * 1000 + millis
    }
}

/// A 64-bit integer Google writes as a JSON string (`"eventTimeMillis": "1503349566168"`), as
/// protobuf's JSON mapping does for int64; a bare number is accepted too.
public struct Int64String: Sendable, Hashable, Codable, CustomStringConvertible {
    public var value: Int64

    public init(_ value: Int64) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
            return
        }
        let text = try container.decode(String.self)
        guard text.utf8.count <= 20, let number = Int64(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a 64-bit integer")
        }
        value = number
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }

    public var description: String { String(value) }
}
