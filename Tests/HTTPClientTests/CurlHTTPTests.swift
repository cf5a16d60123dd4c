import Foundation
import HTTPClient
import Testing

/// The outbound client against servers that try to turn a call against the caller: an endless
/// body, a trickle, a redirect, silence.
@Suite(.serialized) struct CurlHTTPTests {
    static func post(_ url: URL, timeout: Double = 10, body: String = "{}") -> OutboundRequest {
        OutboundRequest(
            method: "POST", url: url, headers: ["Content-Type": "application/json", "X-Probe": "1"], body: Array(body.utf8),
            timeoutSeconds: timeout)
    }

    static func failure(_ client: CurlHTTP, _ request: OutboundRequest) async -> (OutboundHTTPError?, Duration) {
        let started = ContinuousClock.now
        do throws(OutboundHTTPError) {
            _ = try await client.send(request)
            return (nil, ContinuousClock.now - started)
        } catch {
            return (error, ContinuousClock.now - started)
        }
    }

    @Test func anAnswerArrivesWithItsStatusHeadersAndBody() async throws {
        let server = try HostileServer { send, _ in
            _ = send("HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nX-Answer: yes\r\nContent-Length: 5\r\n\r\nhello")
        }
        defer { server.stop() }
        let response = try await CurlHTTP().send(Self.post(server.url, body: #"{"a":1}"#))
        #expect(response.status == 201)
        #expect(response.headers["x-answer"] == "yes")
        #expect(response.body == Array("hello".utf8))
        let head = try #require(server.requests.first)
        #expect(head.hasPrefix("POST / HTTP/1.1\r\n"))
        #expect(head.contains("X-Probe: 1\r\n"))
        #expect(!head.lowercased().contains("expect:"), "no 100-continue round trip")
    }

    @Test func anEndlessChunkedBodyEndsAtTheCap() async throws {
        let server = try HostileServer { send, sendBytes in
            guard send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
            let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 0x20, count: 0x10000) + Array("\r\n".utf8)
            // Stops by itself after 2 GiB, so a client without a cap fails the test instead of hanging it.
            for _ in 0..<32_768 where sendBytes(chunk) {}
        }
        defer { server.stop() }
        let cap = 1 << 20
        let (error, elapsed) = await Self.failure(CurlHTTP(maxResponseBytes: cap), Self.post(server.url, timeout: 30))
        #expect(error?.kind == .tooLarge)
        #expect(error?.message == "response too large: more than \(cap) bytes")
        #expect(elapsed < .seconds(5), "ended at the cap, long before the 30 s deadline")
        // The connection is closed: the server's writes stop within what loopback's socket buffers hold.
        try await Task.sleep(for: .milliseconds(300))
        let sent = server.bytesSent
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.bytesSent == sent)
        #expect(sent < cap + 32 << 20)
    }

    /// Answers over a cap that is not the body's stream: a declared length, an endless header block.
    enum Oversized: String, CaseIterable, Sendable {
        case contentLength, headerBlock

        var script: HostileServer.Script {
            switch self {
            case .contentLength:
                { send, _ in
                    _ = send("HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n")
                    Thread.sleep(forTimeInterval: 5)
                }
            case .headerBlock:
                { send, _ in
                    guard send("HTTP/1.1 200 OK\r\n") else { return }
                    for index in 0..<1_000_000 where send("X-Filler-\(index): \(String(repeating: "a", count: 1000))\r\n") {}
                }
            }
        }
    }

    @Test(arguments: Oversized.allCases)
    func anOversizedAnswerIsRefusedAtOnce(_ answer: Oversized) async throws {
        let server = try HostileServer(answer.script)
        defer { server.stop() }
        let client = CurlHTTP(maxResponseBytes: 1 << 20, maxHeaderBytes: 64 << 10)
        let (error, elapsed) = await Self.failure(client, Self.post(server.url, timeout: 30))
        #expect(error?.kind == .tooLarge)
        #expect(elapsed < .seconds(5))
    }

    @Test func aTrickleEndsAtTheTotalDeadline() async throws {
        let server = try HostileServer { send, _ in
            guard send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n") else { return }
            // A byte a second: never idle long enough for an idle timeout to fire.
            for _ in 0..<100 where send("x") { Thread.sleep(forTimeInterval: 1) }
        }
        defer { server.stop() }
        let (error, elapsed) = await Self.failure(CurlHTTP(), Self.post(server.url, timeout: 2.5))
        #expect(error?.kind == .timedOut)
        #expect(elapsed >= .seconds(2.4) && elapsed < .seconds(5), "\(elapsed)")
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func aRedirectIsReturnedNeverFollowed(status: Int) async throws {
        let target = try HostileServer { send, _ in _ = send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") }
        defer { target.stop() }
        let origin = try HostileServer { send, _ in
            _ = send("HTTP/1.1 \(status) Moved\r\nLocation: \(target.url.absoluteString)elsewhere\r\nContent-Length: 0\r\n\r\n")
        }
        defer { origin.stop() }
        var request = Self.post(origin.url)
        request.headers["Authorization"] = "Bearer secret"
        let response = try await CurlHTTP().send(request)
        #expect(response.status == status)
        #expect(response.headers["location"] == "\(target.url.absoluteString)elsewhere")
        try await Task.sleep(for: .milliseconds(100))
        #expect(target.requests.isEmpty)
    }

    @Test func cancellingTheCallerEndsTheTransfer() async throws {
        let server = try HostileServer { _, _ in Thread.sleep(forTimeInterval: 10) }
        defer { server.stop() }
        let started = ContinuousClock.now
        let call = Task { await Self.failure(CurlHTTP(), Self.post(server.url, timeout: 30)) }
        try await Task.sleep(for: .milliseconds(200))
        call.cancel()
        let (error, _) = await call.value
        #expect(error?.kind == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"])
    func onlyHTTPIsSpoken(url: String) async throws {
        let (error, _) = await Self.failure(CurlHTTP(), OutboundRequest(method: "GET", url: try #require(URL(string: url))))
        #expect(error?.kind == .invalidRequest)
    }

    @Test func headerTextCannotSplitTheRequest() async throws {
        let server = try HostileServer { send, _ in _ = send("HTTP/1.1 204 No Content\r\n\r\n") }
        defer { server.stop() }
        var request = Self.post(server.url)
        request.headers["X-Injected"] = "a\r\nX-Smuggled: 1"
        let (error, _) = await Self.failure(CurlHTTP(), request)
        #expect(error?.kind == .invalidRequest)
        #expect(server.requests.isEmpty)
    }

    @Test func aRefusedConnectionIsANetworkFailure() async throws {
        let server = try HostileServer { _, _ in }
        let url = server.url
        server.stop()
        let (error, elapsed) = await Self.failure(CurlHTTP(), Self.post(url, timeout: 5))
        #expect(error?.kind == .network)
        #expect(elapsed < .seconds(3))
    }
}
