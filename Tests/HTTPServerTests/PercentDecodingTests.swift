import Foundation
import HTTPServer
import Testing

/// libmicrohttpd's own decoding truncates at `%00` and turns every invalid UTF-8 sequence into
/// U+FFFD, so URLs arrive as sent and are decoded by `PercentDecoding`.
@Suite struct PercentDecodingServerTests {
    @Test(arguments: [
        ("/items/a%20b?q=%41%2Bc+d", 200, Array("item a b q=A+c d".utf8)),
        ("/items/a%2Fb", 200, Array("item a/b q=".utf8)),
        ("/items/abc%00def", 200, Array("item abc".utf8) + [0] + Array("def q=".utf8)),
        ("/items/%C3%A9", 200, Array("item \u{E9} q=".utf8)),
    ])
    func pathSegmentsAndQueryValuesAreDecodedExactly(path: String, status: Int, body: [UInt8]) async throws {
        try await withServer { server in
            let reply = try await blocking { [port = server.port] in try RawClient(port: port).request("GET", path) }
            #expect(reply.status == status)
            #expect(reply.body == body)
        }
    }

    @Test(arguments: ["/items/%ff", "/items/%fe", "/items/%C0%AF", "/items/ab%2", "/items/ab%zz"])
    func invalidEncodingIsA400NotAReplacementCharacter(path: String) async throws {
        try await withServer { server in
            let reply = try await blocking { [port = server.port] in try RawClient(port: port).request("GET", path) }
            #expect(reply.status == 400)
            #expect(reply.text.contains("INVALID_PATH_PARAMETER"))
        }
    }
}
