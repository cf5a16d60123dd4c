/// A file given to `entitled import` that cannot be read as it claims to be, or one row of it
/// that cannot be imported: a stable code and, when it is about a place, the line.
public struct ImportInputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable failure category (the CLI's, not an HTTP problem).
    public enum Code: String, Hashable, Sendable, CustomStringConvertible {
        /// The file is larger than the reader's bound, or holds more transactions than it keeps.
        case tooLarge = "IMPORT_TOO_LARGE"
        /// A record is longer, or has more fields, than the reader's bound.
        case lineTooLong = "IMPORT_LINE_TOO_LONG"
        /// A quoted field is never closed, or text follows its closing quote.
        case badQuoting = "IMPORT_BAD_QUOTING"
        /// The header lacks a column the import needs.
        case missingColumn = "IMPORT_MISSING_COLUMN"
        /// Not CSV at all (compressed, Parquet, empty, unreadable).
        case notCSV = "IMPORT_NOT_CSV"
        /// One row cannot be imported (field count, an id, not UTF-8); the others still are.
        case badRow = "IMPORT_BAD_ROW"

        public var description: String { rawValue }
    }

    public var code: Code
    /// The physical line (1-based) the problem is on, when it is about one.
    public var line: Int?
    public var message: String

    public init(_ code: Code, line: Int? = nil, _ message: String) {
        self.code = code
        self.line = line
        self.message = message
    }

    public var description: String {
        (line.map { "line \($0): " } ?? "") + "\(code): \(message)"
    }
}
