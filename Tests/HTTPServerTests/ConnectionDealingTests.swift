import Foundation
import HTTPServer
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Connections are dealt to the poll threads in turn by the server's own accept thread, so that
/// no poll thread ends up holding a client's connections while another idles.
@Suite struct ConnectionDealingTests {
    @Test func keepAliveConnectionsSpreadOverThePollThreads() async throws {
        try await withServer(
            configure: { $0.threads = 2 },
            routes: { router in
                // Which poll thread answered (inline handlers run on it).
                router.add(.get, "/thread", .inline { _ in .text(String(describing: pthread_self())) })
            }
        ) { server in
            let threads = try await blocking { [port = server.port] in
                let clients = try (0..<8).map { _ in try RawClient(port: port) }
                // Twice on each connection: a keep-alive connection stays on its poll thread.
                return try (0..<2).flatMap { _ in try clients.map { try $0.request("GET", "/thread").text } }
            }
            let first = Array(threads.prefix(8))
            #expect(Array(threads.suffix(8)) == first)
            let counts = Dictionary(first.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(counts.count == 2, "connections per poll thread: \(counts.values.sorted())")
            #expect((counts.values.max() ?? 0) - (counts.values.min() ?? 0) <= 2, "connections per poll thread: \(counts.values.sorted())")
        }
    }
}
