import Foundation

/// Where an export's files go: `s3://bucket/prefix` (any S3-compatible store) or `file:///folder`.
public enum ExportDestination: Sendable, Hashable, CustomStringConvertible {
    /// A bucket and a key prefix (empty, or ending in `/`).
    case s3(bucket: String, prefix: String)
    /// An absolute folder on this machine.
    case file(directory: String)

    /// Parses `s3://bucket[/prefix]` or `file:///absolute/folder`.
    /// - Throws: ``ExportError/Code/invalidRequest`` with a message saying what is expected.
    public init(parsing raw: String) throws(ExportError) {
        if raw.hasPrefix("s3://") {
            let rest = raw.dropFirst(5)
            let bucket = String(rest.prefix { $0 != "/" })
            guard Self.isBucketName(bucket) else {
                throw ExportError(.invalidRequest, "'\(bucket)' is not a bucket name (3-63 lower-case letters, digits, dots and hyphens)")
            }
            var prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
            if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
            if !prefix.isEmpty { try ObjectKey.validate(prefix + "x") }
            self = .s3(bucket: bucket, prefix: prefix)
        } else if raw.hasPrefix("file://") {
            var path = String(raw.dropFirst(7))
            if path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            guard path.hasPrefix("/"), path == "/" || (try? ObjectKey.validate(String(path.dropFirst()))) != nil else {
                throw ExportError(.invalidRequest, "expected file:/// and an absolute folder without . or .. segments, such as file:///var/lib/entitled/exports")
            }
            self = .file(directory: path)
        } else {
            throw ExportError(.invalidRequest, "expected s3://bucket/prefix or file:///folder")
        }
    }

    public var description: String {
        switch self {
        case .s3(let bucket, let prefix): "s3://\(bucket)/\(prefix)"
        case .file(let directory): "file://\(directory)"
        }
    }

    /// S3's bucket naming rules (the DNS-compatible ones every S3-compatible store accepts).
    static func isBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        func alphanumeric(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
        return alphanumeric(first) && alphanumeric(last) && !name.contains("..")
            && bytes.allSatisfy { alphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }
}

/// The file formats of an export.
public enum ExportFormat: String, Sendable, Hashable, CaseIterable {
    /// RFC 4180 CSV with a header row.
    case csv
    /// One JSON object per line.
    case jsonl

    /// The file name extension.
    public var fileExtension: String { rawValue }
    /// The `Content-Type` of the uploaded object.
    public var contentType: String {
        switch self {
        case .csv: "text/csv; charset=utf-8"
        case .jsonl: "application/x-ndjson"
        }
    }
}

/// The tables an export can hold (their columns: docs/exports.md).
public enum ExportTable: String, Sendable, Hashable, CaseIterable {
    case customers, subscriptions, transactions, events
}

/// Object keys (and the relative paths of a file destination): checked once for both.
public enum ObjectKey {
    /// The longest key S3 accepts, in bytes.
    public static let maxBytes = 1024

    /// Refuses an empty key, one over 1024 bytes, control characters, a leading `/`, and empty,
    /// `.` or `..` segments: HTTP clients normalize those away (the signed path would not be the
    /// one sent) and on a file system they would leave the destination folder.
    public static func validate(_ key: String) throws(ExportError) {
        guard !key.isEmpty, key.utf8.count <= maxBytes, !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw ExportError(.invalidRequest, "an object key must be 1-\(maxBytes) bytes without control characters")
        }
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) where segment.isEmpty || segment == "." || segment == ".." {
            throw ExportError(.invalidRequest, "an object key must not have empty, . or .. segments")
        }
    }
}

/// Where finished export files are stored: whole or not at all.
public protocol ExportSink: Sendable {
    /// Stores the local file `file` under `key` (relative to the destination's prefix or folder).
    func store(file: URL, key: String, contentType: String) async throws(ExportError)
}
