import Foundation
import HTTPServer
import Testing

/// Starts a server on a free loopback port with test routes; stops it afterwards.
func withServer(
    configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    routes: (inout Router) -> Void = { _ in },
    _ body: (HTTPServer) async throws -> Void
) async throws {
    var configuration = HTTPServer.Configuration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.accessLog = nil
    configuration.errorLog = nil
    configure(&configuration)
    var router = Router()
    router.add(.get, "/healthz", .inline { _ in .text("ok") })
    router.post("/echo") { request in Response(status: 200, body: request.body) }
    router.get("/items/{id}") { request in .text("item \(try request.parameter("id")) q=\(request.query["q"] ?? "")") }
    // A handler that takes a while (400 ms, bounded): its duration is what the header-timeout
    // test needs. Tests that need a handler in flight hold one on a `Gate` instead.
    router.get("/slow") { _ in
        try await Task.sleep(for: .milliseconds(400))
        return .text("slow done")
    }
    router.get("/fail") { _ in throw CancellationError() }
    router.get("/teapot") { _ in throw HTTPError(status: 418, code: "TEAPOT", detail: "short and stout") }
    routes(&router)
    let server = HTTPServer(configuration: configuration, router: router)
    try server.start()
    do {
        try await body(server)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}

@Suite struct ServerTests {
    @Test func keepAliveServesTwoRequestsOnOneConnection() async throws {
        try await withServer { server in
            let (first, second, third) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return (
                    try client.request("GET", "/healthz"), try client.request("GET", "/items/42?q=x"),
                    try client.request("POST", "/echo", body: Array("hello".utf8))
                )
            }
            #expect(first.status == 200)
            #expect(first.text == "ok")
            #expect(second.status == 200)
            #expect(second.text == "item 42 q=x")
            #expect(third.text == "hello")
        }
    }

    @Test(arguments: [
        ("/either/ready", 200, "fast ready"),  // the poll thread answers
        ("/either/later", 200, "slow later"),  // fast declines: the pool answers
        ("/either/bad", 418, "TEAPOT"),  // fast throws: its error is the answer
    ])
    func inlineFirstAnswersFastOrFallsBackToSlow(path: String, status: Int, contains: String) async throws {
        try await withServer(routes: { router in
            router.get(
                "/either/{id}",
                fast: { request in
                    let id = try request.parameter("id")
                    if id == "bad" { throw HTTPError(status: 418, code: "TEAPOT", detail: "no") }
                    return id == "ready" ? .text("fast \(id)") : nil
                }
            ) { request in
                .text("slow \(try request.parameter("id"))")
            }
        }) { server in
            let reply = try await blocking { [port = server.port] in try RawClient(port: port).request("GET", path) }
            #expect(reply.status == status)
            #expect(reply.text.contains(contains))
        }
    }

    @Test func oversizedBodyGets413() async throws {
        try await withServer(configure: { $0.maxBodyBytes = 1024 }) { server in
            let reply = try await blocking { [port = server.port] in
                try RawClient(port: port).request("POST", "/echo", body: [UInt8](repeating: 65, count: 4096))
            }
            #expect(reply.status == 413)
            #expect(reply.headers["content-type"] == "application/problem+json")
            let problem = try JSONDecoder().decode(ProblemDetails.self, from: Data(reply.body))
            #expect(problem.code == "PAYLOAD_TOO_LARGE")
            #expect(problem.status == 413)
        }
    }

    @Test func chunkedBodyBeyondLimitGets413() async throws {
        try await withServer(configure: { $0.maxBodyBytes = 1000 }) { server in
            var raw = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            for _ in 0..<4 { raw += "200\r\n" + String(repeating: "b", count: 512) + "\r\n" }
            raw += "0\r\n\r\n"
            let reply = try await blocking { [port = server.port, raw] in
                let client = try RawClient(port: port)
                try client.send(raw)
                return try client.readReply()
            }
            #expect(reply.status == 413)
        }
    }

    @Test func bodyWithinLimitIsDelivered() async throws {
        try await withServer(configure: { $0.maxBodyBytes = 100_000 }) { server in
            let body = (0..<100_000).map { UInt8($0 % 251) }
            let reply = try await blocking { [port = server.port] in
                try RawClient(port: port).request("POST", "/echo", body: body)
            }
            #expect(reply.status == 200)
            #expect(reply.body == body)
        }
    }

    @Test func unknownPathIs404AndWrongMethodIs405WithAllow() async throws {
        try await withServer { server in
            let (missing, wrong, wrongGet, head) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return (
                    try client.request("GET", "/nope"), try client.request("DELETE", "/echo"),
                    try client.request("POST", "/healthz"), try client.request("HEAD", "/healthz")
                )
            }
            #expect(missing.status == 404)
            #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(missing.body)).code == "NOT_FOUND")
            #expect(wrong.status == 405)
            #expect(wrong.headers["allow"] == "POST")
            #expect(wrongGet.status == 405)
            #expect(wrongGet.headers["allow"] == "GET, HEAD")
            #expect(head.status == 200)
        }
    }

    @Test(arguments: [
        "GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",  // HTTP/1.1 without Host
        "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    ])
    func malformedRequestGets400(raw: String) async throws {
        try await withServer { server in
            let reply = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                try client.send(raw)
                return try client.readReply()
            }
            #expect(reply.status == 400)
        }
    }

    @Test func nonHTTPGarbageIsDroppedAndTheServerCarriesOn() async throws {
        try await withServer { server in
            let (closed, after) = try await blocking { [port = server.port] in
                let garbage = try RawClient(port: port)
                try garbage.send("GARBAGE\u{0}\u{1}\r\n\r\n")
                let closed = (try? garbage.readReply()) == nil
                return (closed, try RawClient(port: port).request("GET", "/healthz"))
            }
            #expect(closed)
            #expect(after.status == 200)
        }
    }

    @Test func oversizedHeadersAreRefused() async throws {
        try await withServer(configure: { $0.maxHeaderBytes = 4096 }) { server in
            let reply = try await blocking { [port = server.port] in
                try RawClient(port: port).request(
                    "GET", "/healthz", headers: ["X-Big": String(repeating: "h", count: 40_000)])
            }
            #expect(reply.status == 431 || reply.status == 413)
        }
    }

    @Test func overlongURLGets414() async throws {
        try await withServer(configure: { $0.maxURLBytes = 100; $0.maxHeaderBytes = 16_384 }) { server in
            let reply = try await blocking { [port = server.port] in
                try RawClient(port: port).request("GET", "/items/" + String(repeating: "a", count: 200))
            }
            #expect(reply.status == 414)
        }
    }

    @Test func requestIdIsEchoedOrGenerated() async throws {
        try await withServer { server in
            let (echoed, generated, another) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return (
                    try client.request("GET", "/healthz", headers: ["X-Request-Id": "abc-123"]),
                    try client.request("GET", "/healthz", headers: ["X-Request-Id": "bad id\twith spaces"]),
                    try client.request("GET", "/healthz")
                )
            }
            #expect(echoed.headers["x-request-id"] == "abc-123")
            let id = try #require(generated.headers["x-request-id"])
            #expect(id != "bad id\twith spaces")
            #expect(!id.isEmpty)
            #expect(another.headers["x-request-id"] != id)
        }
    }

    @Test func handlerErrorsBecomeProblems() async throws {
        try await withServer { server in
            let (teapot, failed) = try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                return (try client.request("GET", "/teapot"), try client.request("GET", "/fail"))
            }
            #expect(teapot.status == 418)
            let problem = try JSONDecoder().decode(ProblemDetails.self, from: Data(teapot.body))
            #expect(problem.code == "TEAPOT")
            #expect(problem.detail == "short and stout")
            #expect(problem.requestId == teapot.headers["x-request-id"])
            #expect(failed.status == 500)
            #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(failed.body)).code == "INTERNAL_ERROR")
        }
    }

    @Test func slowHandlerDoesNotStallOtherRequests() async throws {
        let gate = Gate()
        try await withServer(
            configure: { $0.threads = 1 },
            routes: { router in
                router.get("/held") { _ in
                    await gate.wait()
                    return .text("held done")
                }
            }
        ) { server in
            let port = server.port
            async let held = blocking { try RawClient(port: port).request("GET", "/held") }
            #expect(await eventually { gate.entered == 1 })
            // With a single poll thread, this answers only if the held handler is off that thread.
            let fast = try await blocking { try RawClient(port: port, timeoutSeconds: 5).request("GET", "/healthz") }
            #expect(fast.status == 200)
            gate.open()
            #expect(try await held.text == "held done")
        }
    }

    @Test func twoHundredConcurrentClientsAreAllAnswered() async throws {
        // All from 127.0.0.1: no per-IP cap here (tested on its own).
        try await withServer(configure: { $0.perIPConnectionLimit = 0 }) { server in
            let port = server.port
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for worker in 0..<200 {
                    group.addTask {
                        try await blocking {
                            let client = try RawClient(port: port)
                            var statuses: [Int] = []
                            for i in 0..<3 {
                                let reply = try client.request("GET", "/items/\(worker)-\(i)")
                                if reply.text == "item \(worker)-\(i) q=" { statuses.append(reply.status) }
                            }
                            return statuses
                        }
                    }
                }
                var all: [Int] = []
                for try await result in group { all += result }
                return all
            }
            #expect(statuses.count == 600)
            #expect(statuses.allSatisfy { $0 == 200 })
        }
    }

    @Test func gracefulShutdownFinishesInFlightThenRefuses() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        configuration.accessLog = nil
        let gate = Gate()
        var router = Router()
        router.get("/slow") { _ in
            await gate.wait()
            return .text("finished")
        }
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        let port = server.port
        async let inFlight = blocking { try RawClient(port: port).request("GET", "/slow") }
        #expect(await eventually { gate.entered == 1 })
        let shutdown = Task { await server.shutdown() }
        // Shutdown has begun (new connections are refused) while the request is still in flight.
        #expect(await eventually { (try? RawClient(port: port).request("GET", "/other")) == nil })
        gate.open()
        let reply = try await inFlight
        #expect(reply.status == 200)
        #expect(reply.text == "finished")
        #expect(reply.headers["connection"]?.lowercased() == "close")
        await shutdown.value
        let refused = try await blocking { (try? RawClient(port: port).request("GET", "/slow")) == nil }
        #expect(refused)
    }

    @Test(arguments: [
        (0.0, "0.000"), (1.5, "1.500"), (0.0004, "0.000"), (0.0005, "0.001"), (12.3456, "12.346"), (999.9996, "1000.000"),
        (-2.25, "-2.250"), (Double.nan, "null"), (Double.infinity, "null"),
    ])
    func logDurationsHaveThreeDecimals(value: Double, expected: String) {
        var line = JSONLine()
        line.add("d", value)
        #expect(line.finish() == #"{"d":\#(expected)}"#)
    }

    @Test func accessLogWritesOneJSONLinePerRequest() async throws {
        var pipe: [Int32] = [0, 0]
        #expect(Foundation.pipe(&pipe) == 0)
        let writer = LogWriter(fileDescriptor: pipe[1])
        try await withServer(configure: { $0.accessLog = writer }) { server in
            try await blocking { [port = server.port] in
                let client = try RawClient(port: port)
                _ = try client.request("GET", "/items/7", headers: ["X-Request-Id": "log-test"])
                _ = try client.request("GET", "/nope")
            }
        }
        close(pipe[1])
        let data = FileHandle(fileDescriptor: pipe[0], closeOnDealloc: true).readDataToEndOfFile()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(first?["requestId"] as? String == "log-test")
        #expect(first?["status"] as? Int == 200)
        #expect(first?["path"] as? String == "/items/7")
        let second = try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any]
        #expect(second?["status"] as? Int == 404)
    }
}

@Suite struct RouterTests {
    @Test func matchesParametersAndReportsAllowedMethods() {
        var router = Router()
        router.get("/v1/customers/{appUserId}") { _ in .text("") }
        router.post("/v1/customers/{appUserId}/transactions") { _ in .text("") }
        guard case .found(_, let parameters) = router.match(.get, "/v1/customers/u%201") else {
            Issue.record("no match")
            return
        }
        #expect(parameters == ["appUserId": "u%201"])
        guard case .methodNotAllowed(let allow) = router.match(.put, "/v1/customers/x/transactions") else {
            Issue.record("expected 405")
            return
        }
        #expect(allow == [.post])
        guard case .notFound = router.match(.get, "/v1/customers") else {
            Issue.record("expected 404")
            return
        }
        #expect(router.registeredRoutes.map(\.pattern) == ["/v1/customers/{appUserId}", "/v1/customers/{appUserId}/transactions"])
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(1_795_953_600_123), "2026-11-29T12:00:00.123Z"),
        (Int64(951_782_400_000), "2000-02-29T00:00:00.000Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
        (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
    ])
    func formatsISO8601(milliseconds: Int64, expected: String) {
        #expect(ISO8601.format(milliseconds: milliseconds) == expected)
    }
}
