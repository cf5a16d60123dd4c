import Foundation
import HTTPServer
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A LogWriter on a pipe: what it writes, read back.
final class PipeLog {
    let writer: LogWriter
    private let readEnd: Int32
    private let writeEnd: Int32

    init(format: LogFormat?, level: LogLevel) {
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        (readEnd, writeEnd) = (ends[0], ends[1])
        writer = LogWriter(fileDescriptor: writeEnd, threshold: 0, format: format, level: level)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Everything written so far (after a flush).
    func text() -> String {
        writer.flush()
        var flags = fcntl(readEnd, F_GETFL)
        flags |= O_NONBLOCK
        _ = fcntl(readEnd, F_SETFL, flags)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

@Suite struct LogFormatTests {
    @Test func levelsBelowTheWritersAreDropped() throws {
        let log = PipeLog(format: .json, level: .warn)
        #expect(log.writer.record(.debug, type: "x") == nil)
        #expect(log.writer.record(.info, type: "x") == nil)
        var line = try #require(log.writer.record(.warn, type: "server"))
        line.add("event", "careful")
        log.writer.write(line)
        if var error = log.writer.record(.error, type: "server") {
            error.add("event", "broken")
            log.writer.write(error)
        }
        let lines = log.text().split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains(#""level":"warn","type":"server","event":"careful""#))
        #expect(lines[1].contains(#""level":"error""#))

        log.writer.configure(format: .json, level: .debug)
        #expect(log.writer.record(.debug, type: "x") != nil)
    }

    @Test func textFormatIsReadableAndQuotesWhatNeedsIt() throws {
        let log = PipeLog(format: .text, level: .info)
        var line = try #require(log.writer.record(.info, type: "access"))
        line.add("requestId", "abc-1")
        line.add("path", "/v1/customers/a b")
        line.add("status", 200)
        line.add("durationMs", 1.5)
        line.add("empty", "")
        log.writer.write(line)
        let text = log.text()
        // TIME LEVEL type then key=value in the order written.
        let pattern = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  access requestId=abc-1 path="/v1/customers/a b" status=200 durationMs=1.5 empty=""\n$/#
        #expect(text.wholeMatch(of: pattern) != nil, "\(text)")
    }

    @Test func automaticFormatIsJSONOnAPipeAndTextOnATerminal() throws {
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        defer { close(ends[0]); close(ends[1]) }
        #expect(LogFormat.automatic(for: ends[1]) == .json)
        #if os(Linux)
            // A pseudo-terminal: /dev/ptmx, unlocked (TIOCSPTLCK), its peer /dev/pts/N (TIOCGPTN).
            let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
            try #require(master >= 0)
            defer { close(master) }
            var unlock: Int32 = 0
            var number: UInt32 = 0
            try #require(ioctl(master, 0x4004_5431, &unlock) == 0)
            try #require(ioctl(master, 0x8004_5430, &number) == 0)
            let terminal = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
            try #require(terminal >= 0)
            defer { close(terminal) }
        #else
            let terminal = open("/dev/tty", O_RDWR | O_NOCTTY)
            try #require(terminal >= 0)
            defer { close(terminal) }
        #endif
        #expect(LogFormat.automatic(for: terminal) == .text)
        #expect(LogWriter(fileDescriptor: terminal).format == .text)
    }
}
