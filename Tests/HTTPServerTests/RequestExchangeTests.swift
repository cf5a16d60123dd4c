import Foundation
import Testing

@testable import HTTPServer

/// ``RequestExchange`` without a socket: the head's limits and route, body assembly and draining,
/// and which answer each request gets — call by call, as libmicrohttpd's access handler feeds it.
@Suite struct RequestExchangeTests {
    static let limits = RequestExchange.Limits(
        maxURLBytes: 64, maxHeaderBytes: 512, maxBodyBytes: 16, discardBudget: 40, refusalDrainBytes: 8)

    static let router: Router = {
        var router = Router()
        router.add(.get, "/items/{id}", .inline { _ in .text("item") })
        router.post("/echo") { request in Response(status: 200, body: request.body) }
        router.post("/guarded", admit: { request in
            guard request.headers["Authorization"] == "Bearer ok" else {
                throw HTTPError(status: 401, code: "UNAUTHORIZED", detail: "no")
            }
        }) { _ in .text("in") }
        return router
    }()

    struct Outcome {
        var admitted: RequestExchange.Step
        var exchange: RequestExchange
    }

    /// Admits a request with these headers (and the target length as sent).
    static func admit(
        _ method: String, _ path: String, headers: HTTPHeaders = [:], targetBytes: Int? = nil, headerBytes: Int = 100,
        peer: String = "192.0.2.1", proxies: TrustedProxies = TrustedProxies()
    ) -> Outcome {
        var exchange = RequestExchange(targetBytes: targetBytes ?? path.utf8.count, limits: limits)
        let head = RequestExchange.Head(
            method: HTTPMethod(method), path: path, requestId: "r-1", headers: headers, peer: peer, headerBytes: headerBytes,
            query: { (["q": "x"], []) })
        let step = exchange.admit(head, router: router, trustedProxies: proxies) { error, request in
            (error as? any HTTPResponseError)?.response(requestId: request.requestId)
                ?? HTTPError.internalError.response(requestId: request.requestId)
        }
        return Outcome(admitted: step, exchange: exchange)
    }

    static func receive(_ exchange: inout RequestExchange, _ text: String) -> RequestExchange.Step {
        Array(text.utf8).withUnsafeBufferPointer { exchange.receive($0) }
    }

    static func code(_ response: Response) -> String? {
        (try? JSONDecoder().decode(ProblemDetails.self, from: Data(response.body)))?.code
    }

    static func answered(_ step: RequestExchange.Step) -> Response? {
        if case .answer(let response) = step { return response }
        return nil
    }

    static func proceeds(_ step: RequestExchange.Step) -> Bool {
        if case .proceed = step { return true }
        return false
    }

    /// Every refusal decided from the head waits for a later call (a first-call answer closes
    /// keep-alive connections) and is the request's answer at the end.
    @Test(arguments: [
        ("GET", "/items/1", [String: String](), 64 + 1, 100, 414, "URI_TOO_LONG", false),
        ("GET", "/items/1", [:], nil, 513, 431, "HEADERS_TOO_LARGE", false),
        ("GET", "/nothing", [:], nil, 100, 404, "NOT_FOUND", false),
        ("DELETE", "/items/1", [:], nil, 100, 405, "METHOD_NOT_ALLOWED", false),
        ("GET", "/items/1", ["Content-Length": "5"], nil, 100, 413, "BODY_NOT_ALLOWED", true),
        ("POST", "/echo", ["Content-Length": "17"], nil, 100, 413, "PAYLOAD_TOO_LARGE", false),
        ("POST", "/guarded", ["Content-Length": "2"], nil, 100, 401, "UNAUTHORIZED", true),
        ("POST", "/guarded", [:], nil, 100, 401, "UNAUTHORIZED", false),
    ] as [(String, String, [String: String], Int?, Int, Int, String, Bool)])
    func theHeadDecidesARefusal(
        method: String, path: String, headers: [String: String], target: Int?, headerBytes: Int, status: Int, code: String,
        close: Bool
    ) {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name, value) }
        var outcome = Self.admit(method, path, headers: fields, targetBytes: target, headerBytes: headerBytes)
        #expect(Self.proceeds(outcome.admitted))
        #expect(outcome.exchange.closeAfter == close)
        let answer = Self.answered(outcome.exchange.complete())
        #expect(answer?.status == status)
        #expect(answer.flatMap(Self.code) == code)
    }

    @Test func aRefusalThatWaitsFor100ContinueIsAnsweredAtOnce() {
        let outcome = Self.admit("POST", "/echo", headers: ["Content-Length": "1000", "Expect": "100-Continue"])
        #expect(Self.answered(outcome.admitted)?.status == 413)
        let admitted = Self.admit("POST", "/echo", headers: ["Content-Length": "3", "Expect": "100-continue"])
        #expect(Self.proceeds(admitted.admitted))
    }

    @Test func aBodyIsAssembledFromItsPiecesAndHandedToTheHandler() throws {
        var exchange = Self.admit("POST", "/echo", headers: ["Content-Length": "11"]).exchange
        #expect(Self.proceeds(Self.receive(&exchange, "hello ")))
        #expect(Self.proceeds(Self.receive(&exchange, "world")))
        guard case .run(.async, let request) = exchange.complete() else {
            Issue.record("not run")
            return
        }
        #expect(request.body == Array("hello world".utf8))
        #expect(request.requestId == "r-1")
        #expect(request.query == ["q": "x"])
    }

    @Test func aRouteGetsItsParametersAndTheClientAddressBehindATrustedProxy() throws {
        let proxies = TrustedProxies([try #require(CIDR(parsing: "10.0.0.0/8"))])
        var outcome = Self.admit(
            "GET", "/items/42", headers: ["X-Forwarded-For": "198.51.100.7, 10.0.0.2"], peer: "10.0.0.1", proxies: proxies)
        #expect(outcome.exchange.remoteAddress == "198.51.100.7")
        guard case .run(.inline, let request) = outcome.exchange.complete() else {
            Issue.record("not run")
            return
        }
        #expect(try request.parameter("id") == "42")
        #expect(request.remoteAddress == "198.51.100.7")
    }

    @Test func aBodyPastTheLimitBecomes413AndIsDrainedUpToTheBudget() {
        // Chunked (no Content-Length): the limit is found while reading.
        var exchange = Self.admit("POST", "/echo", headers: ["Transfer-Encoding": "chunked"]).exchange
        #expect(Self.proceeds(Self.receive(&exchange, String(repeating: "a", count: 10))))
        #expect(Self.proceeds(Self.receive(&exchange, String(repeating: "b", count: 10))))  // 20 > 16: refused, drained
        #expect(exchange.refusal?.status == 413)
        #expect(Self.proceeds(Self.receive(&exchange, String(repeating: "c", count: 20))))  // 40: within the budget
        let cut = Self.answered(Self.receive(&exchange, "d"))  // 41 > 40: answered at once, the connection is cut
        #expect(cut.flatMap(Self.code) == "PAYLOAD_TOO_LARGE")
    }

    @Test func aBodyRefusedBeforeReadingIsDrainedOnlyALittle() {
        // Longer than the drain (8), or of unknown length: answered before the body, drained at the close.
        for headers: HTTPHeaders in [["Content-Length": "10"], ["Transfer-Encoding": "chunked"]] {
            let outcome = Self.admit("POST", "/guarded", headers: headers)
            #expect(Self.answered(outcome.admitted)?.status == 401)
            #expect(outcome.exchange.lingers)
        }
        let chunked = Self.admit("GET", "/items/1", headers: ["Transfer-Encoding": "chunked"])
        #expect(Self.answered(chunked.admitted).flatMap(Self.code) == "BODY_NOT_ALLOWED")
        var drained = Self.admit("POST", "/guarded", headers: ["Content-Length": "3"]).exchange
        #expect(Self.proceeds(Self.receive(&drained, "abc")))
        #expect(Self.answered(drained.complete())?.status == 401)
        #expect(!drained.lingers)
    }

    @Test func anAdmittedRequestPassesItsAdmission() {
        var exchange = Self.admit("POST", "/guarded", headers: ["Authorization": "Bearer ok", "Content-Length": "2"]).exchange
        #expect(Self.proceeds(Self.receive(&exchange, "{}")))
        guard case .run(_, let request) = exchange.complete() else {
            Issue.record("not run")
            return
        }
        #expect(request.body == Array("{}".utf8))
    }
}

/// The header deadline each connection carries (set at accept and after each response, cleared
/// while a request is served), without a clock or a socket.
@Suite struct HeaderDeadlineTests {
    @Test func aDeadlineIsTheTimeoutAfterNowAndCutsOnlyOnceItHasPassed() {
        let due = HeaderDeadline.due(after: 5_000, .milliseconds(1500))
        #expect(due == 1_500_005_000)
        #expect(!HeaderDeadline.isOverdue(due, at: due))
        #expect(HeaderDeadline.isOverdue(due, at: due + 1))
        #expect(!HeaderDeadline.isOverdue(HeaderDeadline.none, at: .max), "a request being served is never cut")
        #expect(HeaderDeadline.due(after: 7, .seconds(-3)) == 7)
    }
}
