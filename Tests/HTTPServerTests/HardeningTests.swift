import Foundation
import HTTPServer
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Polls `condition` every 5 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}

/// A gate that async handlers wait on; counts who entered.
final class Gate: Sendable {
    private let state = Mutex<(entered: Int, open: Bool)>((0, false))
    var entered: Int { state.withLock { $0.entered } }

    func wait() async {
        state.withLock { $0.entered += 1 }
        // A cancelled handler stops waiting (sleeping would throw at once and spin).
        while !state.withLock({ $0.open }) && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func open() { state.withLock { $0.open = true } }
}

@Suite struct ShutdownTests {
    /// libmicrohttpd aborts in MHD_stop_daemon ("called while we have suspended connections")
    /// unless a handler that has not finished by the end of the grace period is answered first.
    @Test func shutdownAnswersRequestsWhoseHandlersNeverFinish() async throws {
        let gate = Gate()
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        configuration.accessLog = nil
        configuration.shutdownGracePeriod = .milliseconds(200)
        var router = Router()
        router.get("/stuck") { _ in
            await gate.wait()  // never opened: a handler blocked on a frozen database
            return .text("unreachable")
        }
        router.post("/stuck") { _ in
            await gate.wait()
            return .text("unreachable")
        }
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        let port = server.port
        let replies = Task {
            try await withThrowingTaskGroup(of: RawClient.Reply?.self) { group in
                for index in 0..<3 {
                    group.addTask {
                        try await blocking {
                            let client = try RawClient(port: port)
                            // A closed connection is an acceptable answer too; a hang is not.
                            return index == 0
                                ? try? client.request("GET", "/stuck")
                                : try? client.request("POST", "/stuck", body: Array("{}".utf8))
                        }
                    }
                }
                var all: [RawClient.Reply?] = []
                for try await reply in group { all.append(reply) }
                return all
            }
        }
        #expect(await eventually { gate.entered == 3 })
        await server.shutdown()  // aborted the process before the fix
        let answered = try await replies.value
        #expect(answered.count == 3)
        #expect(answered.compactMap { $0 }.count == 3)  // every client got its answer
        for reply in answered.compactMap({ $0 }) {
            #expect(reply.status == 503)
            #expect(reply.headers["retry-after"] != nil)
            #expect(reply.headers["content-type"] == "application/problem+json")
            #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(reply.body)).code == "SHUTTING_DOWN")
        }
        #expect(server.requestsInFlight == 0)
        gate.open()
    }
}

@Suite struct LimitTests {
    /// An oversized header or query string is refused (431, 414), never served.
    @Test(arguments: [
        ("header", 431, "HEADERS_TOO_LARGE"),
        ("query", 414, "URI_TOO_LONG"),
    ])
    func defaultHeaderAndURLLimitsHold(kind: String, status: Int, code: String) async throws {
        try await withServer { server in
            let reply = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return kind == "header"
                    ? try client.request("GET", "/healthz", headers: ["X-Big": String(repeating: "h", count: 30_000)])
                    : try client.request("GET", "/healthz?q=" + String(repeating: "a", count: 20_000))
            }
            #expect(reply.status == status)
            #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(reply.body)).code == code)
        }
    }

    @Test func headersAndURLJustWithinTheLimitsAreServed() async throws {
        try await withServer(configure: { $0.maxHeaderBytes = 4096; $0.maxURLBytes = 1000 }) { server in
            let (header, query) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return (
                    try client.request("GET", "/healthz", headers: ["X-Big": String(repeating: "h", count: 3000)]),
                    try client.request("GET", "/items/1?q=" + String(repeating: "a", count: 980))
                )
            }
            #expect(header.status == 200)
            #expect(query.status == 200)
        }
    }

    /// A body on a route that takes none is refused, not buffered up to the body limit.
    @Test func bodyOnARouteThatTakesNoneIsRefusedBeforeItIsRead() async throws {
        try await withServer { server in
            let outcome = try await blocking { [port = server.port] in
                let client = try RawClient(port: port, timeoutSeconds: 5)
                // Announce 1 MiB, send a tenth of it: the server must not wait for the rest.
                try client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
                try? client.send([UInt8](repeating: 65, count: 100_000))
                return Outcome(client)
            }
            // The connection is cut with the body unread, so the 413 may be lost to the reset;
            // what must not happen is the server waiting for (and buffering) the rest.
            #expect(outcome == .status(413) || outcome == .closed)
        }
    }

    @Test func smallBodyOnARouteThatTakesNoneGets413AndTheConnectionCloses() async throws {
        try await withServer { server in
            let (reply, closed, chunked) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                let reply = try client.request("GET", "/healthz", body: Array("hello".utf8))
                let other = try RawClient(port: port)
                try other.send("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                return (reply, client.isClosedByPeer(), try other.readReply())
            }
            #expect(reply.status == 413)
            #expect(reply.headers["connection"]?.lowercased() == "close")
            #expect(closed)
            #expect(chunked.status == 413)
        }
    }

    /// A route that needs credentials refuses bad ones before reading the body.
    @Test func admissionRefusesBeforeTheBodyIsRead() async throws {
        let handled = Atomic<Int>(0)
        try await withServer(routes: { router in
            addGuardedEcho(&router) { handled.add(1, ordering: .relaxed) }
        }) { server in
            let (large, small, admitted) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port, timeoutSeconds: 5)
                try client.send(
                    "POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nContent-Length: 1000000\r\n\r\n")
                try? client.send([UInt8](repeating: 65, count: 100_000))
                let large = Outcome(client)
                let small = try RawClient(port: port).request(
                    "POST", "/guarded", headers: ["Authorization": "Bearer bad"], body: Array("payload".utf8))
                let admitted = try RawClient(port: port).request(
                    "POST", "/guarded", headers: ["Authorization": "Bearer good"], body: Array("payload".utf8))
                return (large, small, admitted)
            }
            // Answered without the rest of the body; a small body is drained and answered.
            #expect(large == .status(401))
            #expect(small.status == 401)
            #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(small.body)).code == "UNAUTHORIZED")
            #expect(admitted.status == 200)
            #expect(admitted.text == "payload")
            #expect(handled.load(ordering: .relaxed) == 1)
        }
    }

    /// One address cannot fill `connectionLimit` with its connections.
    @Test func connectionsBeyondThePerIPLimitAreRefused() async throws {
        try await withServer(configure: { $0.perIPConnectionLimit = 3 }) { server in
            let port = server.port
            let (statuses, fourth) = try await blocking {
                let held = try (0..<3).map { _ in try RawClient(port: port) }
                // The three are accepted (and counted) once they answer.
                let statuses = try held.map { try $0.request("GET", "/healthz").status }
                let fourth = (try? RawClient(port: port).request("GET", "/healthz"))?.status
                return (statuses, fourth)  // the three close here
            }
            #expect(statuses == [200, 200, 200])
            #expect(fourth == nil)
            // Once they are gone, a new connection is served again.
            #expect(await eventually { (try? RawClient(port: port).request("GET", "/healthz"))?.status == 200 })
        }
    }

    /// Headers trickled one line per second cannot keep a connection open past the header timeout.
    @Test func headersTricklingPastTheHeaderTimeoutAreCut() async throws {
        try await withServer(configure: { $0.headerTimeoutSeconds = 1; $0.idleTimeoutSeconds = 30 }) { server in
            let (closed, elapsed) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port, timeoutSeconds: 1)
                let start = ContinuousClock.now
                try client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
                // Each line keeps the idle timer fresh; only the header deadline can end this.
                for index in 0..<50 {
                    Thread.sleep(forTimeInterval: 0.2)
                    do {
                        try client.send("X-Trickle-\(index): y\r\n")
                    } catch {
                        return (true, ContinuousClock.now - start)
                    }
                    if client.isReadableAndClosed() { return (true, ContinuousClock.now - start) }
                }
                return (false, ContinuousClock.now - start)
            }
            #expect(closed)
            #expect(elapsed < .seconds(8))
        }
    }

    @Test func aPromptRequestIsNotCutByTheHeaderTimeout() async throws {
        try await withServer(configure: { $0.headerTimeoutSeconds = 1 }) { server in
            let replies = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                let first = try client.request("GET", "/healthz")
                return [first, try client.request("GET", "/slow"), try client.request("GET", "/healthz")]
            }
            #expect(replies.map(\.status) == [200, 200, 200])
        }
    }
}

@Suite struct ClientAddressTests {
    @Test(arguments: [
        ("10.0.0.0/8", "10.0.0.0/8"), ("192.0.2.7", "192.0.2.7/32"), ("0.0.0.0/0", "0.0.0.0/0"),
        ("2001:db8::/32", "2001:db8::/32"), ("::1", "::1/128"), ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
    ])
    func parsesCIDRs(text: String, canonical: String) {
        #expect(CIDR(parsing: text)?.description == canonical)
    }

    @Test(arguments: [
        "", "10.0.0.0/33", "10.0.0.1/8", "10.0.0/8", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8/8", "2001:db8::/129",
        "2001:db8::1/32", "host.example/8", "10.0.0.0/ 8", "::ffff:10.0.0.0/8",
    ])
    func rejectsInvalidCIDRs(text: String) {
        #expect(CIDR(parsing: text) == nil)
    }

    @Test(arguments: [
        ("10.0.0.0/8", "10.255.1.2", true), ("10.0.0.0/8", "11.0.0.1", false), ("192.0.2.0/25", "192.0.2.127", true),
        ("192.0.2.0/25", "192.0.2.128", false), ("2001:db8::/32", "2001:db8:ffff::1", true),
        ("2001:db8::/32", "2001:db9::1", false), ("10.0.0.0/8", "::ffff:10.1.1.1", true), ("::/0", "10.0.0.1", false),
        ("0.0.0.0/0", "2001:db8::1", false),
    ])
    func matchesAddresses(network: String, address: String, inside: Bool) throws {
        let cidr = try #require(CIDR(parsing: network))
        #expect(cidr.contains(try #require(IPAddress(parsing: address))) == inside)
    }

    static let proxies = TrustedProxies(["10.0.0.0/8", "2001:db8::/32"].compactMap { CIDR(parsing: $0) })

    @Test(arguments: [
        // An untrusted peer's header is ignored.
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),
        // A trusted peer: the rightmost entry that is not a proxy.
        ("10.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.1", ["6.6.6.6, 198.51.100.1, 10.0.0.2"], "198.51.100.1"),
        ("10.0.0.1", ["6.6.6.6", "198.51.100.1 , 10.0.0.2"], "198.51.100.1"),
        ("2001:db8::5", ["2001:db8::7, 2001:0DB9::1"], "2001:db9::1"),
        ("10.0.0.1", ["[2001:db9::1]:443"], "2001:db9::1"),
        ("10.0.0.1", ["198.51.100.1:5555"], "198.51.100.1"),
        ("::ffff:10.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        // No header, or only proxies: the leftmost trusted address.
        ("10.0.0.1", [], "10.0.0.1"),
        ("10.0.0.1", ["10.0.0.3, 10.0.0.2"], "10.0.0.3"),
        // Garbage stops the walk at the proxy that appended it.
        ("10.0.0.1", ["198.51.100.1, garbage, 10.0.0.2"], "10.0.0.2"),
        ("10.0.0.1", ["unknown"], "10.0.0.1"),
        ("10.0.0.1", [""], "10.0.0.1"),
    ])
    func resolvesForwardedFor(peer: String, forwardedFor: [String], client: String) {
        #expect(Self.proxies.clientAddress(peer: peer, forwardedFor: forwardedFor) == client)
    }

    @Test func noProxiesMeansThePeer() {
        #expect(TrustedProxies().clientAddress(peer: "10.0.0.1", forwardedFor: ["198.51.100.1"]) == "10.0.0.1")
    }

    @Test(arguments: [(["127.0.0.0/8"], "198.51.100.4"), ([], "127.0.0.1")])
    func handlersSeeTheResolvedAddress(trusted: [String], expected: String) async throws {
        let logged = try await withPipeLog { writer in
            try await withServer(configure: {
                $0.trustedProxies = TrustedProxies(trusted.compactMap { CIDR(parsing: $0) })
                $0.accessLog = writer
            }, routes: { router in
                router.add(.get, "/whoami", .inline { .text($0.remoteAddress) })
            }) { server in
                let reply = try await blocking { [port = server.port] in
                    try RawClient(port: port).request("GET", "/whoami", headers: ["X-Forwarded-For": "198.51.100.4"])
                }
                #expect(reply.text == expected)
            }
        }
        #expect(logged.contains(#""remote":"\#(expected)""#))
    }
}

/// Runs `body` with a log writer on a pipe and returns what was written.
func withPipeLog(_ body: (LogWriter) async throws -> Void) async throws -> String {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    let writer = LogWriter(fileDescriptor: ends[1])
    try await body(writer)
    writer.flush()
    close(ends[1])
    let data = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true).readDataToEndOfFile()
    return String(decoding: data, as: UTF8.self)
}

/// How a server ended an exchange, as one raw client saw it.
enum Outcome: Equatable {
    case status(Int)
    case closed
    case timedOut

    /// Reads one reply from `client`.
    init(_ client: RawClient) {
        do {
            self = .status(try client.readReply().status)
        } catch RawClient.Failure.timeout {
            self = .timedOut
        } catch {
            self = .closed
        }
    }
}

extension RawClient {
    /// True when the peer has closed (read returns 0) or reset the connection; false when nothing
    /// is there yet (waits at most 1 ms).
    func isReadableAndClosed() -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 1) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0
    }
}

/// An access log on a pipe nobody reads must never block the server: the writer drops lines and
/// reports the drops.
@Suite struct LogWriterTests {
    @Test func aPipeNobodyReadsNeverBlocksTheWriterAndDropsAreReported() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        // More than the pipe holds (64 KiB), so the writer thread blocks in write(2).
        let writer = LogWriter(fileDescriptor: ends[1], threshold: 1024, capacity: 256 * 1024)
        let done = Atomic<Bool>(false)
        let line = String(repeating: "x", count: 100)
        Thread.detachNewThread {
            // Far more than the pipe (64 KiB) and the buffer hold together.
            for _ in 0..<20_000 { writer.write(line: line) }
            done.store(true, ordering: .relaxed)
        }
        #expect(await eventually { done.load(ordering: .relaxed) })
        #expect(writer.droppedLines > 0)
        #expect(!writer.flush(timeout: .milliseconds(50)))  // still stuck, and flush says so without hanging

        // Once the reader drains the pipe, the count is reported in the log itself.
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: false)
        let text = Mutex("")
        reader.readabilityHandler = { handle in
            let data = handle.availableData
            text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        defer { reader.readabilityHandler = nil }
        #expect(writer.flush(timeout: .seconds(10)))
        let dropped = writer.droppedLines
        // Every dropped line is accounted for by the "dropped" records once the reader catches up.
        func reported() -> Int {
            text.withLock { log in
                log.split(separator: "\n").filter { $0.contains(#""event":"dropped""#) }.compactMap { line -> Int? in
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    return object?["lines"] as? Int
                }.reduce(0, +)
            }
        }
        #expect(await eventually { reported() == dropped })
        close(ends[1])
    }

    @Test func aStuckAccessLogDoesNotStopTheServer() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let writer = LogWriter(fileDescriptor: ends[1])
        try await withServer(configure: { $0.accessLog = writer }) { server in
            let statuses = try await blocking { [port = server.port] in
                let client = try RawClient(port: port, timeoutSeconds: 5)
                // ~200 bytes a line: 3,000 lines are far past what the pipe holds.
                return try (0..<3000).map { _ in try client.request("GET", "/healthz").status }
            }
            #expect(statuses.count == 3000)
            #expect(statuses.allSatisfy { $0 == 200 })
        }
        // The pipe is still full (nobody reads); the writer counted what it could not keep.
        #expect(writer.droppedLines > 0 || writer.flush(timeout: .milliseconds(10)) == false)
        // Drain until the writer holds nothing: its thread would otherwise write the rest into
        // whatever reuses these descriptor numbers after the `defer` closes them (a later test's
        // pipe once received 367 of these lines).
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = ContinuousClock.now + .seconds(10)
        var drained = false
        while !drained && ContinuousClock.now < deadline {
            while read(ends[0], &buffer, buffer.count) > 0 {}
            drained = writer.flush(timeout: .milliseconds(20))
        }
        #expect(drained)
    }
}
