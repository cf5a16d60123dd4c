import Foundation
import Synchronization
import Testing

@testable import HTTPServer

/// A request refused before its body is read (failed admission), sent without
/// `Expect: 100-continue`: the server answers after reading part of the body and closes. Closing
/// with unread input resets the connection, which can destroy the answer before the client reads
/// it; the server drains what the client still sends first, so the answer always arrives.
@Suite struct LingeringCloseTests {
    @Test func aRefusalBeforeALargeBodyIsAlwaysRead() async throws {
        try await withServer(routes: { addGuardedEcho(&$0) }) { server in
            let outcomes = try await blocking { [port = server.port] in
                let body = [UInt8](repeating: 65, count: 1_000_000)
                return try (0..<50).map { _ -> Outcome in
                    let client = try RawClient(port: port, timeoutSeconds: 10)
                    try? client.send(
                        "POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nContent-Length: \(body.count)\r\n\r\n")
                    try? client.send(body)
                    return Outcome(client)
                }
            }
            #expect(outcomes.filter { $0 != .status(401) }.count == 0)
        }
    }
}

/// `POST /guarded`: admitted only with `Authorization: Bearer good` (else 401 before the body is
/// read); echoes the body, calling `handled` first.
func addGuardedEcho(_ router: inout Router, handled: @escaping @Sendable () -> Void = {}) {
    router.post(
        "/guarded",
        admit: { request in
            guard request.headers["Authorization"] == "Bearer good" else {
                throw HTTPError(status: 401, code: "UNAUTHORIZED", detail: "bad key")
            }
        }
    ) { request in
        handled()
        return Response(status: 200, body: request.body)
    }
}

/// Headers every answer carries, whatever produced it.
@Suite struct EveryResponseHeaderTests {
    @Test func everyAnswerForbidsContentTypeSniffing() async throws {
        try await withServer(routes: { router in
            router.get("/json") { _ in try Response.json(["a": 1]) }
        }) { server in
            let replies = try await blocking { [port = server.port] in
                try ["/json", "/missing"].map { try RawClient(port: port).request("GET", $0) }
            }
            #expect(replies.map(\.status) == [200, 404])
            for reply in replies { #expect(reply.headers["x-content-type-options"] == "nosniff") }
        }
    }
}
