import EntitledCrypto
import HTTPClient
import Foundation

/// Credentials for AWS Signature Version 4 (S3 and every S3-compatible store).
public struct AWSCredentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyId: String
    /// Never logged: ``description`` leaves it out.
    public var secretAccessKey: String
    /// A temporary credential's session token (STS), sent as `x-amz-security-token`.
    public var sessionToken: String?

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "AWSCredentials(\(accessKeyId), secret redacted)" }
}

/// AWS Signature Version 4 over request headers (the `Authorization` header form), pure: the
/// instant is a parameter, so signatures are reproducible against AWS's published examples.
///
/// Paths and query values are signed exactly as sent: ``encodePath(_:)`` and ``canonicalQuery(_:)``
/// build both the URL and the canonical request, so the two cannot disagree. S3's rule applies to
/// the path (each segment encoded once, not twice as for other services).
public struct SigV4Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// The payload hash of an empty body.
    public static let emptyPayloadHash = Hex.encode(SHA256.hash([UInt8]()))

    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// One request to sign: the method, the encoded path, the query and the headers to sign
    /// (`host` among them; names in any case).
    public struct Request: Sendable {
        public var method: String
        /// As sent: from ``SigV4Signer/encodePath(_:)``.
        public var encodedPath: String
        /// Unencoded names and values; encoded and sorted for signing and for the URL alike.
        public var query: [(String, String)]
        public var headers: [String: String]
        /// Lowercase hex SHA-256 of the body.
        public var payloadHash: String

        public init(method: String, encodedPath: String, query: [(String, String)] = [], headers: [String: String], payloadHash: String) {
            self.method = method
            self.encodedPath = encodedPath
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// `request`'s headers with `x-amz-date`, `x-amz-content-sha256` (when `contentHashHeader`, as
    /// S3 requires), `x-amz-security-token` (with a session token) and `Authorization` added.
    public func sign(_ request: Request, at date: Date, contentHashHeader: Bool = true) throws(ExportError) -> [String: String] {
        var signed = request
        signed.headers["x-amz-date"] = Self.timestamp(date)
        if contentHashHeader { signed.headers["x-amz-content-sha256"] = request.payloadHash }
        if let token = credentials.sessionToken { signed.headers["x-amz-security-token"] = token }
        signed.headers["Authorization"] = try authorization(signed, at: date)
        return signed.headers
    }

    /// The `Authorization` value for `request`, whose headers already hold everything signed.
    public func authorization(_ request: Request, at date: Date) throws(ExportError) -> String {
        let canonical = Self.canonicalRequest(request)
        let toSign = stringToSign(canonicalRequest: canonical.text, at: date)
        let key = try Self.signingKey(secret: credentials.secretAccessKey, day: Self.day(date), region: region, service: service)
        let signature = Hex.encode(try Self.hmac(Array(toSign.utf8), key: key))
        return "\(Self.algorithm) Credential=\(credentials.accessKeyId)/\(scope(date)),"
            + "SignedHeaders=\(canonical.signedHeaders),Signature=\(signature)"
    }

    /// `yyyyMMdd/region/service/aws4_request`.
    public func scope(_ date: Date) -> String { "\(Self.day(date))/\(region)/\(service)/aws4_request" }

    /// The string to sign: algorithm, timestamp, scope and the canonical request's hash.
    public func stringToSign(canonicalRequest: String, at date: Date) -> String {
        [Self.algorithm, Self.timestamp(date), scope(date), Hex.encode(SHA256.hash(Array(canonicalRequest.utf8)))].joined(separator: "\n")
    }

    /// The canonical request and its signed-header list: header names lower-cased and sorted,
    /// values trimmed with inner runs of spaces collapsed.
    public static func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        let headers = Dictionary(
            request.headers.map { ($0.key.lowercased(), collapse($0.value)) }, uniquingKeysWith: { first, second in first + "," + second }
        ).sorted { $0.key < $1.key }
        let signedHeaders = headers.map(\.key).joined(separator: ";")
        let text = [
            request.method, request.encodedPath, canonicalQuery(request.query),
            headers.map { "\($0.key):\($0.value)\n" }.joined(), signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The key for one day, region and service: HMAC chained from `"AWS4" + secret`.
    public static func signingKey(secret: String, day: String, region: String, service: String) throws(ExportError) -> [UInt8] {
        var key = Array(("AWS4" + secret).utf8)
        for part in [day, region, service, "aws4_request"] { key = try hmac(Array(part.utf8), key: key) }
        return key
    }

    /// `name=value` pairs encoded (RFC 3986 unreserved kept) and sorted by name, then value.
    public static func canonicalQuery(_ query: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (encode($0.0), encode($0.1)) }
        let sorted = encoded.sorted { (a, b) -> Bool in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// An object path (`/bucket/key…`) with each segment encoded and the slashes kept.
    public static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
    }

    /// Every byte outside `A-Za-z0-9-._~` as `%XX` (upper-case hex), as SigV4 requires.
    static func encode(_ text: String) -> String { PercentEncoding.encodeUnreserved(text) ?? "" }

    static func collapse(_ value: String) -> String {
        value.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    static func hmac(_ message: [UInt8], key: [UInt8]) throws(ExportError) -> [UInt8] {
        do {
            return try HMACSHA256.authenticationCode(for: message, key: key)
        } catch {
            throw ExportError(.invalidRequest, "signing failed: \(error.message)")
        }
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    public static func timestamp(_ date: Date) -> String {
        let c = utcComponents(date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// `yyyyMMdd` in UTC.
    public static func day(_ date: Date) -> String { String(timestamp(date).prefix(8)) }

    private static func utcComponents(_ date: Date) -> DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    }
}
