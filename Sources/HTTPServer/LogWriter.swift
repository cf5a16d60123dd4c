import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A buffered, thread-safe writer of log lines to a file descriptor (stdout by default).
///
/// Lines are appended to a buffer under a lock and written with one `write(2)` when the buffer
/// passes 32 KiB or when `flush()` runs (the server flushes on a timer and at shutdown), so a
/// busy server does not pay a syscall per request.
public final class LogWriter: Sendable {
    private let fd: Int32
    private let buffer = Mutex<[UInt8]>([])
    private let threshold: Int

    /// A writer to standard output.
    public static let standardOutput = LogWriter(fileDescriptor: 1)
    /// A writer to standard error.
    public static let standardError = LogWriter(fileDescriptor: 2, threshold: 0)

    public init(fileDescriptor: Int32, threshold: Int = 32 * 1024) {
        self.fd = fileDescriptor
        self.threshold = threshold
    }

    /// Appends one line (a newline is added).
    public func write(line: String) {
        buffer.withLock { buffer in
            buffer.append(contentsOf: line.utf8)
            buffer.append(0x0A)
            if buffer.count >= threshold { Self.drain(&buffer, to: fd) }
        }
    }

    /// Writes whatever is buffered.
    public func flush() {
        buffer.withLock { Self.drain(&$0, to: fd) }
    }

    private static func drain(_ buffer: inout [UInt8], to fd: Int32) {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    break  // a closed stdout must not take the server down; the lines are dropped
                }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Builds JSON objects for log lines without an encoder (the access log is on the hot path).
public struct JSONLine {
    // Bytes, not a String: appending to a String re-checks its encoding and capacity each time,
    // which showed on every request's access-log line.
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    public init() { bytes.reserveCapacity(256) }

    public mutating func add(_ key: String, _ value: String) {
        separator(key)
        JSONLine.appendQuoted(value, to: &bytes)
    }

    public mutating func add(_ key: String, _ value: Int) {
        separator(key)
        bytes += String(value).utf8
    }

    /// Three decimals, like `%.3f` (without Foundation's formatter, which is dear on every request).
    public mutating func add(_ key: String, _ value: Double) {
        separator(key)
        bytes += Self.threeDecimals(value).utf8
    }

    static func threeDecimals(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 9e12 else { return "null" }
        let thousandths = Int64((abs(value) * 1000).rounded())
        let fraction = String(thousandths % 1000)
        let sign = value < 0 && thousandths != 0 ? "-" : ""
        return sign + String(thousandths / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    public mutating func add(_ key: String, _ value: Bool) {
        separator(key)
        bytes += (value ? "true" : "false").utf8
    }

    public func finish() -> String { String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self) }

    private mutating func separator(_ key: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        JSONLine.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends `value` as a JSON string literal (UTF-8) the way Foundation's `JSONEncoder` writes it
    /// with `.withoutEscapingSlashes`: `"` and `\` escaped, `\b \f \n \r \t` by name, other
    /// control characters as `\u00xx`, everything else as is. With `escapingSlashes`, `/` is
    /// written `\/`, as `JSONEncoder` does without that option.
    public static func appendQuoted(_ value: String, to bytes: inout [UInt8], escapingSlashes: Bool = false) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "/") where escapingSlashes: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "/")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
