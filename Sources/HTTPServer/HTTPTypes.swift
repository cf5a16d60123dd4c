import Foundation

/// An HTTP request method. A struct so that any token a client sends can be represented.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let patch = HTTPMethod("PATCH")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")

    public var description: String { rawValue }
}

/// Header fields in arrival order, looked up case-insensitively.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        for field in fields where field.name.caseInsensitiveEquals(name) { return field.value }
        return nil
    }

    /// Appends a field (duplicates allowed, as in HTTP).
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field called `name` with one value.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        fields.append((name, value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

extension String {
    /// ASCII case-insensitive equality without allocating (header names are ASCII tokens).
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
            let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
            if lx != ly { return false }
        }
        return true
    }
}

/// One HTTP request, fully received (the body is bounded by the server's limit).
public struct Request: Sendable {
    public var method: HTTPMethod
    /// The path without the query string, as sent (still percent-encoded).
    public var path: String
    /// Query parameters (last value wins).
    public var query: [String: String]
    /// The query parameters' names given more than once (``query`` keeps the last value), for a
    /// route that refuses a repeated parameter rather than guess which value was meant.
    public var repeatedQueryNames: Set<String> = []
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Values of `{name}` segments of the matched route, as sent (still percent-encoded).
    public var pathParameters: [String: String]
    /// The client's IP address as text: the peer's, or when the peer is a trusted proxy the
    /// client it names in `X-Forwarded-For` (see ``TrustedProxies``). Budgets and logs use this.
    public var remoteAddress: String
    /// The `X-Request-Id` of this request: the client's when it sent a sane one, else generated.
    public var requestId: String

    public init(
        method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = [:],
        body: [UInt8] = [], pathParameters: [String: String] = [:], remoteAddress: String = "127.0.0.1",
        requestId: String = "test"
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
        self.requestId = requestId
    }

    /// A path parameter, percent-decoded; a 400 problem naming it when absent, or
    /// `INVALID_PATH_PARAMETER` when it is not percent-encoded UTF-8 (see ``PercentDecoding``).
    public func parameter(_ name: String) throws -> String {
        guard let value = pathParameters[name] else {
            throw HTTPError(status: 400, code: "MISSING_PARAMETER", detail: "missing path parameter '\(name)'")
        }
        guard let decoded = PercentDecoding.decode(value) else {
            throw HTTPError(
                status: 400, code: "INVALID_PATH_PARAMETER", detail: "path parameter '\(name)' is not percent-encoded UTF-8")
        }
        return decoded
    }

    /// Decodes the body as JSON, mapping failures to a 400 problem with code `INVALID_JSON`.
    public func decodeJSON<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch {
            throw HTTPError(status: 400, code: "INVALID_JSON", detail: "the request body is not the expected JSON")
        }
    }
}

/// An HTTP response.
public struct Response: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int = 200, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text response.
    public static func text(_ text: String, status: Int = 200) -> Response {
        Response(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// A JSON response from already-encoded bytes.
    public static func json(bytes: [UInt8], status: Int = 200) -> Response {
        Response(status: status, headers: ["Content-Type": "application/json"], body: bytes)
    }

    /// A JSON response encoding `value` (camelCase keys, sorted for stable output).
    public static func json<T: Encodable>(_ value: T, status: Int = 200, encoder: JSONEncoder = .entitledDefault) throws
        -> Response
    {
        .json(bytes: Array(try encoder.encode(value)), status: status)
    }
}

extension JSONEncoder {
    /// The encoder used for API bodies: sorted keys, no escaped slashes, ISO 8601 dates with milliseconds.
    public static var entitledDefault: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601.format(date))
        }
        return encoder
    }
}

/// ISO 8601 UTC with milliseconds: `2026-11-29T12:00:00.000Z`.
public enum ISO8601 {
    public static func format(_ date: Date) -> String {
        format(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// Formats epoch milliseconds without Foundation's formatters (fast, allocation-light, thread-safe):
    /// digits go straight into a 24-byte buffer. Years outside 0...9999 are clamped (not reachable
    /// from a 64-bit millisecond clock in this millennium's use; the format has four year digits).
    public static func format(milliseconds: Int64) -> String {
        let ms = Int(((milliseconds % 1000) + 1000) % 1000)
        let seconds = (milliseconds - Int64(ms)) / 1000
        let days = Int(seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400)
        let secondOfDay = Int(seconds - Int64(days) * 86400)
        let (y, m, d) = civil(fromDays: days)
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(min(max(y, 0), 9999), 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(m, 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(d, 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            buffer[19] = UInt8(ascii: ".")
            put(ms, 3, at: 20)
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    /// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
    static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
