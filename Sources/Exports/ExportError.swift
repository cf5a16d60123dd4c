/// A failure of an export's upload or file write, with a stable code.
public struct ExportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable failure category.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The store refused the request (4xx other than 429): credentials, signature, bucket, permissions.
        public static let refused = Code(rawValue: "EXPORT_REFUSED")
        /// The store did not answer usably after every retry (5xx, 429, network, timeout).
        public static let unavailable = Code(rawValue: "EXPORT_UNAVAILABLE")
        /// The store answered 2xx with a body this client cannot use (no upload id, an embedded error).
        public static let invalidResponse = Code(rawValue: "EXPORT_INVALID_RESPONSE")
        /// A local file could not be read or written.
        public static let fileSystem = Code(rawValue: "EXPORT_FILE_SYSTEM")
        /// The request could not be built (a key or destination this client refuses, signing failed).
        public static let invalidRequest = Code(rawValue: "EXPORT_INVALID_REQUEST")
    }

    public var code: Code
    /// The HTTP status of the store's last answer, when there was one.
    public var status: Int?
    /// The store's own error code (`SignatureDoesNotMatch`, `NoSuchBucket`, …), when it sent one.
    public var storeCode: String?
    /// What went wrong, for logs (never contains credentials or signatures).
    public var message: String

    public init(_ code: Code, _ message: String, status: Int? = nil, storeCode: String? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.storeCode = storeCode
    }

    public var description: String {
        "\(code): \(message)" + (status.map { " (HTTP \($0)" + (storeCode.map { " \($0)" } ?? "") + ")" } ?? "")
    }
}
