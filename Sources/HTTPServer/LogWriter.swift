import Foundation
import JSONCoding
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread-safe writer of log lines to a file descriptor (stdout by default) that never blocks
/// its callers.
///
/// `write(line:)` only appends to a bounded buffer under a lock; a thread of the writer's own
/// drains it with `write(2)` (at once past `threshold` bytes, else every 200 ms), so a busy server
/// does not pay a syscall per request and a reader that stops reading (a full pipe, a stuck
/// terminal) stalls only that thread. When the buffer is full, lines are dropped and counted; the
/// count is written as a line of its own (`{"type":"log","event":"dropped","lines":N}`) once the
/// descriptor accepts data again. Lines are JSON objects, written as such or, in the `text`
/// format (a terminal's default), readably; ``record(_:type:)`` starts a line of a level.
public final class LogWriter: Sendable {
    private let state: WriterState
    let settings: LogControl
    let fileDescriptor: Int32

    /// A writer to standard output.
    public static let standardOutput = LogWriter(fileDescriptor: 1)
    /// A writer to standard error.
    public static let standardError = LogWriter(fileDescriptor: 2, threshold: 0)

    /// - Parameters:
    ///   - threshold: buffered bytes that wake the writer thread before its 200 ms tick (0: every line).
    ///   - capacity: buffered bytes beyond which lines are dropped (and counted).
    ///   - format: nil: text on a terminal, JSON lines otherwise (``LogFormat/automatic(for:)``).
    ///   - level: lines below it are dropped.
    public init(
        fileDescriptor: Int32, threshold: Int = 32 * 1024, capacity: Int = 4 << 20, format: LogFormat? = nil,
        level: LogLevel = .info
    ) {
        self.fileDescriptor = fileDescriptor
        settings = LogControl(format: format ?? .automatic(for: fileDescriptor), level: level)
        state = WriterState(fd: fileDescriptor, threshold: threshold, capacity: max(capacity, 1), settings: settings)
    }

    deinit { state.close() }

    /// Appends one line (a newline is added; a JSON object is rewritten readably in the `text`
    /// format), or drops it when the buffer is full. Never blocks on I/O.
    public func write(line: String) { state.append(settings.currentFormat == .text ? LogText.render(line) : line) }

    /// Lines dropped so far because the buffer was full.
    public var droppedLines: Int { state.dropped }

    /// Asks the writer thread to write what is buffered and waits until it has, or until `timeout`
    /// passes (a descriptor nobody reads must not hang shutdown). Returns whether all was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool { state.flush(timeout: timeout) }
}

/// The buffer and the writer thread behind a ``LogWriter``.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`'s lock.
private final class WriterState: @unchecked Sendable {
    let fd: Int32
    let threshold: Int
    let capacity: Int
    let settings: LogControl
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    /// Lines dropped since the last report (written by the thread) and in total.
    private var unreported = 0
    private var droppedTotal = 0
    /// Bumped when the thread has written everything taken up to then.
    private var written: UInt64 = 0
    private var taken: UInt64 = 0
    private var wake = false
    private var closed = false
    private var started = false

    init(fd: Int32, threshold: Int, capacity: Int, settings: LogControl) {
        self.fd = fd
        self.threshold = threshold
        self.capacity = capacity
        self.settings = settings
    }

    var dropped: Int { condition.withLock { droppedTotal } }

    func append(_ line: String) {
        condition.lock()
        defer { condition.unlock() }
        startIfNeeded()
        if pending.count + line.utf8.count + 1 > capacity {
            unreported += 1
            droppedTotal += 1
            return
        }
        let wasEmpty = pending.isEmpty
        pending.append(contentsOf: line.utf8)
        pending.append(0x0A)
        if pending.count >= threshold && !wake {
            wake = true
            condition.signal()
        } else if wasEmpty {
            // The thread sleeps until something is pending: the first line starts its 200 ms
            // batch, so a line is written within that time however quiet the server is.
            condition.signal()
        }
    }

    func flush(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        // Everything appended so far is written once the thread has written the batch that takes
        // it: the next one when something is pending, else the one in flight (if any).
        let target: UInt64
        if pending.isEmpty && unreported == 0 {
            target = taken
        } else {
            startIfNeeded()
            target = taken + 1
            wake = true
            condition.broadcast()
        }
        while written < target {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    /// Called with the lock held.
    private func startIfNeeded() {
        guard !started else { return }
        started = true
        let thread = Thread { [self] in run() }
        thread.name = "entitled-log-\(fd)"
        thread.start()
    }

    private func run() {
        while true {
            condition.lock()
            while !wake && !closed && pending.isEmpty && unreported == 0 {
                condition.wait()
            }
            if !wake && !closed {
                // Batch: give other lines 200 ms to join unless the threshold or a flush wakes us.
                _ = condition.wait(until: Date().addingTimeInterval(0.2))
            }
            var batch: [UInt8] = []
            swap(&batch, &pending)
            if unreported > 0 {
                var line = JSONLine()
                line.add("time", ISO8601.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
                line.add("level", LogLevel.warn.rawValue)
                line.add("type", "log")
                line.add("event", "dropped")
                line.add("lines", unreported)
                let text = line.finish()
                batch.append(contentsOf: (settings.currentFormat == .text ? LogText.render(text) : text).utf8)
                batch.append(0x0A)
                unreported = 0
            }
            wake = false
            taken += 1
            let ticket = taken
            let finished = closed && batch.isEmpty
            condition.unlock()
            Self.writeAll(batch, to: fd)
            condition.withLock {
                written = ticket
                condition.broadcast()
            }
            if finished { return }
        }
    }

    /// Blocking writes on this thread only. A closed descriptor drops the batch: it must not take
    /// the server down.
    private static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
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
        JSONWriter.appendQuoted(value, to: &bytes)
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
        JSONWriter.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }
}
