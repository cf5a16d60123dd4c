/// A streaming reader of delimited text as RFC 4180 writes it: fields separated by one delimiter
/// byte, records ended by CRLF, LF or CR, a field in double quotes may hold the delimiter, line
/// breaks and doubled quotes (`""` for `"`). Bytes are fed in chunks of any size, so a file of any
/// length is read in bounded memory; a record longer than ``maxRecordBytes`` or wider than
/// ``maxFields`` is refused rather than buffered.
///
/// A quote inside an unquoted field is kept as data (exports that embed JSON without quoting it
/// stay readable); text after a closing quote, or a quote never closed, is an error, since where
/// the record ends can no longer be known.
public struct CSVReader: Sendable {
    /// One record: the physical line it starts on (1-based) and its fields' bytes.
    public struct Record: Sendable, Equatable {
        public var line: Int
        public var fields: [[UInt8]]
    }

    public let delimiter: UInt8
    public let maxRecordBytes: Int
    public let maxFields: Int

    private enum State { case fieldStart, unquoted, quoted, quoteInQuoted }
    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fields: [[UInt8]] = []
    private var recordBytes = 0
    private var line = 1
    private var recordLine = 1
    /// A CR just ended a record: a LF right after it belongs to the same line end.
    private var afterCR = false

    public init(delimiter: UInt8 = UInt8(ascii: ","), maxRecordBytes: Int = 1 << 20, maxFields: Int = 1024) {
        self.delimiter = delimiter
        self.maxRecordBytes = maxRecordBytes
        self.maxFields = maxFields
    }

    /// Reads `bytes`, calling `record` for each record they complete (blank lines are skipped).
    /// - Throws: ``ImportInputError`` with the line of the record at fault; `record`'s errors.
    public mutating func feed(_ bytes: some Sequence<UInt8>, _ record: (Record) throws(ImportInputError) -> Void) throws(ImportInputError) {
        let quote = UInt8(ascii: "\""), lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == lf { continue }
            }
            recordBytes += 1
            guard recordBytes <= maxRecordBytes else {
                throw ImportInputError(.lineTooLong, line: recordLine, "a record is longer than \(maxRecordBytes) bytes")
            }
            switch state {
            case .fieldStart, .unquoted:
                if byte == delimiter {
                    try endField()
                } else if byte == lf || byte == cr {
                    try endLine(cr: byte == cr, record)
                } else if byte == quote && state == .fieldStart {
                    state = .quoted
                } else {
                    field.append(byte)
                    state = .unquoted
                }
            case .quoted:
                if byte == quote {
                    state = .quoteInQuoted
                } else {
                    if byte == lf { line += 1 }
                    field.append(byte)
                }
            case .quoteInQuoted:
                if byte == quote {
                    field.append(quote)
                    state = .quoted
                } else if byte == delimiter {
                    try endField()
                } else if byte == lf || byte == cr {
                    try endLine(cr: byte == cr, record)
                } else {
                    throw ImportInputError(.badQuoting, line: line, "text after a closing quote")
                }
            }
        }
    }

    /// Ends the input: the last record when it has no line end.
    /// - Throws: ``ImportInputError`` `.badQuoting` for a quoted field never closed.
    public mutating func finish(_ record: (Record) throws(ImportInputError) -> Void) throws(ImportInputError) {
        if state == .quoted {
            throw ImportInputError(.badQuoting, line: recordLine, "a quoted field is never closed")
        }
        try endRecord(record)
    }

    private mutating func endField() throws(ImportInputError) {
        guard fields.count < maxFields else {
            throw ImportInputError(.lineTooLong, line: recordLine, "a record has more than \(maxFields) fields")
        }
        fields.append(field)
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
    }

    /// A line end outside quotes: the record ends, the next starts on the next line.
    private mutating func endLine(cr: Bool, _ record: (Record) throws(ImportInputError) -> Void) throws(ImportInputError) {
        afterCR = cr
        try endRecord(record)
        line += 1
        recordLine = line
    }

    private mutating func endRecord(_ record: (Record) throws(ImportInputError) -> Void) throws(ImportInputError) {
        let blank = fields.isEmpty && field.isEmpty && state == .fieldStart
        if !blank {
            try endField()
            try record(Record(line: recordLine, fields: fields))
        }
        fields.removeAll(keepingCapacity: true)
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
        recordBytes = 0
    }

    /// The delimiter a header line uses: of comma, semicolon and tab, the one it holds most often
    /// outside quotes (comma when none); `prefix` is the file's first bytes.
    public static func delimiter(ofHeader prefix: some Sequence<UInt8>) -> UInt8 {
        let candidates: [UInt8] = [UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "\t")]
        var counts = [0, 0, 0]
        var quoted = false
        for byte in prefix {
            if byte == UInt8(ascii: "\"") { quoted.toggle() }
            if !quoted && (byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")) { break }
            if !quoted, let index = candidates.firstIndex(of: byte) { counts[index] += 1 }
        }
        let best = counts.indices.max { counts[$0] < counts[$1] } ?? 0
        return counts[best] == 0 ? candidates[0] : candidates[best]
    }
}
