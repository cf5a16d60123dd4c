import Foundation
import HTTPServer
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Lines reach a file or a pipe as they happen (within the writer's 200 ms batch), not only once
/// the buffer fills or the process shuts down: a `kill -9` must lose no more than that.
@Suite struct LogLatencyTests {
    /// Reads what arrives on `fd` within `timeout`, stopping at the first newline.
    private func readLine(from fd: Int32, timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now
            let milliseconds = Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, milliseconds) == 1 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return nil }
            bytes += buffer[0..<count]
            if bytes.contains(0x0A) { return String(decoding: bytes, as: UTF8.self) }
        }
        return nil
    }

    @Test func aSingleLineOnAQuietPipeArrivesWithoutAFlush() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        // The server's own settings: far below the 32 KiB threshold, nobody calls flush.
        let writer = LogWriter(fileDescriptor: ends[1], format: .json)
        for round in 0..<3 {
            let started = ContinuousClock.now
            writer.write(line: #"{"type":"access","round":\#(round)}"#)
            let line = readLine(from: ends[0], timeout: .seconds(1))
            #expect(line == #"{"type":"access","round":\#(round)}"# + "\n")
            // 200 ms batch, with room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(1))
            // A quiet spell: the writer thread goes back to sleep and must wake for the next line.
            Thread.sleep(forTimeInterval: 0.3)
        }
        #expect(writer.flush(timeout: .seconds(2)))
    }
}
