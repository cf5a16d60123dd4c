@testable import EntitledTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Requests that need a key are refused before their body is read.
@Suite struct AdmissionTests {
    /// How the server ended an exchange whose body was announced but only partly sent.
    enum Outcome: Equatable { case status(Int), closed, timedOut }

    /// Sends `head` and `prefix` of the body, never the rest; reads what comes back.
    static func partialExchange(port: Int, head: String, prefix: Int) throws -> Outcome {
        let fd = try Loopback.connect(port: port, timeoutSeconds: 5)
        defer { close(fd) }
        let bytes = Array(head.utf8) + [UInt8](repeating: 0x7B, count: prefix)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // cut by the server: fine
            offset += n
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .closed }
        if n == 0 { return .closed }
        let line = String(decoding: chunk[..<n], as: UTF8.self).split(separator: " ")
        return line.count > 1 ? .status(Int(line[1]) ?? 0) : .closed
    }

    @Test func aBadKeyIsRefusedWithoutReadingTheTransactionBody() async throws {
        try await APIHarness.run { api in
            let head =
                "POST /v1/customers/u1/transactions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-key-0123456789\r\n"
                + "Content-Type: application/json\r\nContent-Length: 900000\r\n\r\n"
            let outcome = try await blocking { [port = api.port] in
                try Self.partialExchange(port: port, head: head, prefix: 100_000)
            }
            // Before: the server waited for the other 800,000 bytes (and would have buffered them).
            #expect(outcome == .status(401) || outcome == .closed)
            // A small body with a bad key gets its 401 intact; with a good key the handler runs.
            let refused = try await api.send("POST", "/v1/customers/u1/transactions", auth: "Bearer nope-0123456789", json: "{}")
            #expect(refused.status == 401)
            #expect(refused.code == "UNAUTHORIZED")
            let admitted = try await api.send("POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: "{}")
            #expect(admitted.status != 401)
        }
    }

    @Test func aBodyOnAGetIsRefused() async throws {
        try await APIHarness.run { api in
            let reply = try await api.send("GET", "/v1/customers/u1", auth: APIHarness.reader, body: Array("{}".utf8))
            #expect(reply.status == 413)
            #expect(reply.code == "BODY_NOT_ALLOWED")
        }
    }
}
