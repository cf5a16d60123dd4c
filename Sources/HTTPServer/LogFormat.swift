import Foundation
import JSONCoding
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How important a log line is; a writer drops lines below its level.
public enum LogLevel: String, Sendable, CaseIterable, Comparable {
    case debug, info, warn, error

    var rank: UInt8 {
        switch self {
        case .debug: 0
        case .info: 1
        case .warn: 2
        case .error: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// How a writer prints its lines: one JSON object per line (for log shippers), or a readable
/// line (`TIME LEVEL type event key=value …`) for people at a terminal.
public enum LogFormat: String, Sendable, CaseIterable {
    case json, text

    /// `text` when `fileDescriptor` is a terminal, else `json`.
    public static func automatic(for fileDescriptor: Int32) -> LogFormat {
        isatty(fileDescriptor) == 1 ? .text : .json
    }
}

/// A writer's format and level, changed at once for every thread that logs (`configure`).
final class LogControl: Sendable {
    private let format: Atomic<UInt8>
    private let level: Atomic<UInt8>

    init(format: LogFormat, level: LogLevel) {
        self.format = Atomic(format == .text ? 1 : 0)
        self.level = Atomic(level.rank)
    }

    func set(format: LogFormat, level: LogLevel) {
        self.format.store(format == .text ? 1 : 0, ordering: .relaxed)
        self.level.store(level.rank, ordering: .relaxed)
    }

    var currentFormat: LogFormat { format.load(ordering: .relaxed) == 1 ? .text : .json }
    func allows(_ level: LogLevel) -> Bool { level.rank >= self.level.load(ordering: .relaxed) }
}

extension LogWriter {
    /// Sets the format (nil: ``LogFormat/automatic(for:)`` of the descriptor) and the lowest level written.
    public func configure(format: LogFormat?, level: LogLevel) {
        settings.set(format: format ?? .automatic(for: fileDescriptor), level: level)
    }

    /// The format lines are written in.
    public var format: LogFormat { settings.currentFormat }

    /// Whether a line of `level` would be written.
    public func isEnabled(_ level: LogLevel) -> Bool { settings.allows(level) }

    /// A new line with `time`, `level` and `type`, or nil when `level` is below the writer's (so a
    /// dropped line costs nothing more).
    public func record(_ level: LogLevel, type: String) -> JSONLine? {
        guard settings.allows(level) else { return nil }
        var line = JSONLine()
        line.add("time", ISO8601.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
        line.add("level", level.rawValue)
        line.add("type", type)
        return line
    }

    /// Writes a line started by ``record(_:type:)``.
    public func write(_ line: JSONLine) { write(line: line.finish()) }
}

/// The readable form of a flat JSON log object: `time`, `level` (upper case), `type`, `event` by
/// position, then every other member as `key=value` (quoted when it holds a space, `"` or `=`).
/// Anything that is not a flat object is returned unchanged.
enum LogText {
    static func render(_ json: String) -> String {
        guard let members = parse(Array(json.utf8)) else { return json }
        var head: [String] = []
        var rest: [String] = []
        let leading = ["time", "level", "type", "event"]
        for key in leading {
            guard let value = members.first(where: { $0.key == key })?.value else { continue }
            head.append(key == "level" ? value.uppercased().padding(toLength: 5, withPad: " ", startingAt: 0) : value)
        }
        for (key, value) in members where !leading.contains(key) {
            rest.append(key + "=" + quoted(value))
        }
        return (head + rest).joined(separator: " ")
    }

    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) else { return value }
        var out = ""
        JSONLine.appendQuotedString(value, to: &out)
        return out
    }

    /// The members of `{"k":"v","n":1,…}` in order, values as text; nil when not such an object.
    static func parse(_ bytes: [UInt8]) -> [(key: String, value: String)]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        // JSONSerialization loses the order: recover it from where each key first appears.
        let text = String(decoding: bytes, as: UTF8.self)
        var members: [(key: String, value: String, at: String.Index)] = []
        for (key, value) in object {
            var encoded = ""
            JSONLine.appendQuotedString(key, to: &encoded)
            let position = text.range(of: encoded + ":")?.lowerBound ?? text.endIndex
            let rendered: String
            switch value {
            case let string as String: rendered = string
            case let number as NSNumber: rendered = String(cString: number.objCType) == "c" ? (number.boolValue ? "true" : "false") : number.stringValue
            case is NSNull: rendered = "null"
            default: return nil
            }
            members.append((key, rendered, position))
        }
        return members.sorted { $0.at < $1.at }.map { ($0.key, $0.value) }
    }
}

extension JSONLine {
    /// `value` as a JSON string literal appended to `text`.
    static func appendQuotedString(_ value: String, to text: inout String) {
        var bytes: [UInt8] = []
        JSONWriter.appendQuoted(value, to: &bytes)
        text += String(decoding: bytes, as: UTF8.self)
    }
}
