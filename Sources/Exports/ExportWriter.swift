import Foundation

/// One cell of an exported row.
public enum ExportValue: Sendable, Hashable {
    case null
    case string(String)
    case integer(Int64)
    case bool(Bool)
    /// Milliseconds since 1970, written as ISO 8601 UTC with milliseconds (`2026-01-02T03:04:05.678Z`).
    case timestamp(Int64)
}

extension ExportValue {
    /// An instant as the files write it: `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC.
    public static func iso8601(_ milliseconds: Int64) -> String { ExportFileWriter<Never>.iso8601(milliseconds) }
}

/// One column of an exported table: its name (the CSV header and the JSON key), what it holds
/// (docs/exports.md lists it), and how a row gives its value. Each table declares its columns once,
/// in one array whose order is the files' column order.
public struct ExportColumn<Row>: Sendable {
    public var name: String
    public var meaning: String
    public var value: @Sendable (Row) -> ExportValue

    public init(_ name: String, _ meaning: String, value: @escaping @Sendable (Row) -> ExportValue) {
        self.name = name
        self.meaning = meaning
        self.value = value
    }
}

/// Writes rows to a local file in one format, a buffer's worth at a time: memory stays bounded
/// whatever the number of rows.
public final class ExportFileWriter<Row> {
    public let format: ExportFormat
    public let columns: [ExportColumn<Row>]
    /// Rows written so far.
    public private(set) var rows = 0
    private let handle: FileHandle
    private let path: String
    private var buffer: [UInt8] = []
    private let flushBytes: Int

    /// Creates (or truncates) the file at `url` and writes the CSV header row.
    public init(url: URL, format: ExportFormat, columns: [ExportColumn<Row>], flushBytes: Int = 64 << 10) throws(ExportError) {
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = FileHandle(forWritingAtPath: url.path) else {
            throw ExportError(.fileSystem, "cannot create \(url.path)")
        }
        self.handle = handle
        self.path = url.path
        self.format = format
        self.columns = columns
        self.flushBytes = max(1, flushBytes)
        if format == .csv { Self.csvLine(columns.map { .string($0.name) }, into: &buffer) }
    }

    deinit { try? handle.close() }

    /// Appends one row.
    public func write(_ row: Row) throws(ExportError) {
        let values = columns.map { $0.value(row) }
        switch format {
        case .csv: Self.csvLine(values, into: &buffer)
        case .jsonl: Self.jsonLine(zip(columns.map(\.name), values), into: &buffer)
        }
        rows += 1
        if buffer.count >= flushBytes { try flush() }
    }

    /// Writes what is buffered and forces it to disk; the file is complete after this.
    public func finish() throws(ExportError) {
        try flush()
        do {
            try handle.synchronize()
            try handle.close()
        } catch {
            throw ExportError(.fileSystem, "cannot finish \(path): \(error.localizedDescription)")
        }
    }

    private func flush() throws(ExportError) {
        guard !buffer.isEmpty else { return }
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            throw ExportError(.fileSystem, "cannot write \(path): \(error.localizedDescription)")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: - Encodings

    /// RFC 4180: fields joined by commas, CRLF after each record; a field holding a comma, a
    /// quote, CR or LF is quoted, its quotes doubled. A null is an empty field.
    static func csvLine(_ values: [ExportValue], into out: inout [UInt8]) {
        for (index, value) in values.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let text: String
            switch value {
            case .null: continue
            case .string(let string): text = string
            case .integer(let number): text = String(number)
            case .bool(let flag): text = flag ? "true" : "false"
            case .timestamp(let milliseconds): text = iso8601(milliseconds)
            }
            CSV.appendField(text, to: &out)
        }
        out.append(contentsOf: [0x0D, 0x0A])
    }

    /// One JSON object, keys in column order, then LF.
    static func jsonLine(_ fields: some Sequence<(String, ExportValue)>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for (name, value) in fields {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            jsonString(name, into: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .null: out.append(contentsOf: "null".utf8)
            case .string(let string): jsonString(string, into: &out)
            case .integer(let number): out.append(contentsOf: String(number).utf8)
            case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
            case .timestamp(let milliseconds): jsonString(iso8601(milliseconds), into: &out)
            }
        }
        out.append(contentsOf: "}\n".utf8)
    }

    static func jsonString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0x00..<0x20: out.append(contentsOf: String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC.
    static func iso8601(_ milliseconds: Int64) -> String {
        let seconds = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let whole = seconds.remainder < 0 ? seconds.quotient - 1 : seconds.quotient
        let fraction = (milliseconds - whole * 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: Double(whole)))
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!, Int(fraction))
    }
}

/// RFC 4180 text, for the exports and anything else the server writes as CSV.
public enum CSV {
    /// One field: quoted when it holds a comma, a quote, CR or LF, its quotes doubled.
    public static func appendField(_ text: String, to out: inout [UInt8]) {
        let needsQuotes = text.utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0D || $0 == 0x0A }
        guard needsQuotes else {
            out.append(contentsOf: text.utf8)
            return
        }
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\"") { out.append(byte) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}
