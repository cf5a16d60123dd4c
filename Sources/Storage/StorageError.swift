/// A storage failure with a stable, documented code.
///
/// The ``code`` and ``message`` are safe to show to clients (HTTP problem bodies, CLI output).
/// The raw database message, when there is one, is kept for operators in ``debugDescription``
/// and never appears in ``description``.
///
/// Two errors are equal when their codes are equal, so tests can write
/// `#expect(throws: StorageError(.schemaTooNew)) { … }`.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable error code. New codes may be added; switch with a `default` branch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as it appears in JSON bodies and logs, e.g. `STORAGE_UNAVAILABLE`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The database cannot be reached or refused the operation for a transient reason
        /// (connection lost, busy, disk full, I/O error). Callers answer 5xx so Apple retries.
        public static let unavailable = Code("STORAGE_UNAVAILABLE")
        /// The database schema is newer than this binary knows; refusing to run on it.
        public static let schemaTooNew = Code("SCHEMA_TOO_NEW")
        /// A uniqueness or foreign-key constraint rejected a write.
        public static let constraint = Code("CONSTRAINT")
        /// A concurrent transaction conflicted and retries were exhausted.
        public static let conflict = Code("CONFLICT")
        /// An id already belongs to another customer (an alias of someone else, or a customer with
        /// aliases of its own): it cannot become an alias.
        public static let aliasConflict = Code("ALIAS_CONFLICT")
        /// A referenced record (customer, …) does not exist.
        public static let notFound = Code("NOT_FOUND")
        /// The database URL could not be parsed or names an unsupported scheme.
        public static let invalidURL = Code("INVALID_DATABASE_URL")
        /// An argument was out of range (limit, cursor, …).
        public static let invalidArgument = Code("INVALID_ARGUMENT")
        /// The store was closed.
        public static let closed = Code("STORE_CLOSED")
        /// A test fault-injection hook aborted the operation.
        public static let faultInjected = Code("FAULT_INJECTED")
        /// One customer's projection cannot be computed now (its last projection failed, e.g. a
        /// stored fact no longer decodes); other customers are unaffected.
        public static let projectionFailed = Code("PROJECTION_FAILED")
        /// Stored data could not be decoded (corruption or a bug).
        public static let corrupt = Code("DATA_CORRUPT")
        /// The backend does not offer this operation (e.g. `entitled backup` on PostgreSQL).
        public static let unsupported = Code("UNSUPPORTED")
        /// Any other database failure.
        public static let `internal` = Code("STORAGE_INTERNAL")

        public var description: String { rawValue }
    }

    /// Which automatic retry, if any, is safe for this failure. Internal: drives the retry loops.
    enum Retry: Sendable, Hashable {
        case none
        /// The connection broke; reconnect, then retry once.
        case reconnect
        /// Serialization failure or deadlock; retry the whole transaction.
        case transaction
    }

    /// The stable code.
    public var code: Code
    /// A short message without database internals, safe for clients.
    public var message: String
    /// The raw database message (SQLite or PostgreSQL), for operators only.
    public var detail: String?
    /// Where the error was created.
    public var file: String
    /// Where the error was created.
    public var line: Int
    var retry: Retry = .none

    /// Creates an error with a code and an optional client-safe message.
    public init(
        _ code: Code, _ message: String? = nil, detail: String? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message ?? code.rawValue
        self.detail = detail
        self.file = file
        self.line = line
    }

    init(_ code: Code, _ message: String?, detail: String?, retry: Retry, file: String = #fileID, line: Int = #line) {
        self.init(code, message, detail: detail, file: file, line: line)
        self.retry = retry
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public var debugDescription: String {
        var text = "StorageError(\(code.rawValue)): \(message) at \(file):\(line)"
        if let detail { text += " — \(detail)" }
        return text
    }

    public static func == (lhs: StorageError, rhs: StorageError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
