import Foundation
@testable import HTTPServer
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

    /// The number after a connection's is often taken (in process, by the client's own socket
    /// between two accepts), so it is held open here: the dealt descriptor must still name the
    /// poll thread asked for, and be the same connection.
    @Test(arguments: [(2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (4, 3)])
    func aDealtDescriptorNamesThePollThreadInTurn(pool: Int, residue: Int) throws {
        var ends: [Int32] = [0, 0]
        #if canImport(Glibc)
            let stream = Int32(SOCK_STREAM.rawValue)
        #else
            let stream = SOCK_STREAM
        #endif
        #expect(socketpair(AF_UNIX, stream, 0, &ends) == 0)
        let (client, peer) = (ends[0], ends[1])
        defer { _ = close(peer) }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)  // as the dealer's accept leaves it
        let neighbour = fcntl(client, F_DUPFD_CLOEXEC, client + 1)
        defer { _ = close(neighbour) }
        var before = stat()
        #expect(fstat(client, &before) == 0)

        let dealt = ConnectionDealer.descriptor(client, residue: Int32(residue), modulo: Int32(pool))
        defer { _ = close(dealt) }
        #expect(dealt % Int32(pool) == Int32(residue))
        var after = stat()
        #expect(fstat(dealt, &after) == 0)
        #expect(after.st_ino == before.st_ino && after.st_dev == before.st_dev)
        #expect(fcntl(dealt, F_GETFD) & FD_CLOEXEC != 0)
        // Still the same connection: what the peer writes arrives on the dealt descriptor.
        #expect(write(peer, "x", 1) == 1)
        var byte: UInt8 = 0
        #expect(read(dealt, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
    }

    /// The listening socket's number is closed only once the dealer's thread has returned: closed
    /// earlier, the number would soon be another socket's (the next server's, in a test process),
    /// and the thread on its way to `accept` would take and close that socket's connections.
    @Test func theListeningSocketOutlivesTheDealersThread() async throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listening >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0 && listen(listening, 8) == 0)
        // The thread waits before its first accept until the gate opens.
        let gate = DispatchSemaphore(value: 0)
        let dealer = ConnectionDealer(socket: listening, server: HTTPServer(router: Router()), beforeAccept: { gate.wait() })
        dealer.start()
        dealer.stop()
        let closing = Task { await dealer.closeWhenEnded() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(fcntl(listening, F_GETFD) != -1, "closed while the dealer's thread could still accept on it")
        for _ in 0..<4 { gate.signal() }
        // Returns once the thread has: the socket is closed then (its number may already be
        // another test's, so it is not looked at again).
        await closing.value
    }

    @Test func aSinglePollThreadKeepsTheDescriptor() {
        let client = dup(1)
        defer { _ = close(client) }
        #expect(ConnectionDealer.descriptor(client, residue: 0, modulo: 1) == client)
        #expect(ConnectionDealer.descriptor(client, residue: client % 2, modulo: 2) == client)
    }
}

/// libmicrohttpd's epoll threads race the call that takes a listening socket away from a running
/// daemon (`MHD_quiesce_daemon`): a thread that reads the daemon as quiesced while the socket still
/// looks registered removes it a second time and aborts the whole process ("Failed to remove listen
/// FD from epoll set"), rarely but under any load. The server binds the socket
/// itself and starts every daemon without one, so that call, and the race, have no place left.
@Suite struct ListeningSocketOwnershipTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources")

    @Test func noDaemonIsGivenOrRelievedOfAListeningSocket() throws {
        let files = try ["HTTPServer", "CMicroHTTPD"].flatMap { folder in
            let url = Self.sources.appendingPathComponent(folder)
            return try FileManager.default.contentsOfDirectory(atPath: url.path).map { url.appendingPathComponent($0) }
        }
        #expect(files.count > 5)
        var flagLines = 0
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for call in ["MHD_quiesce_daemon(", "MHD_OPTION_LISTEN_SOCKET", "MHD_OPTION_SOCK_ADDR"] {
                #expect(!text.contains(call), "\(file.lastPathComponent) names \(call)")
            }
            for line in text.split(separator: "\n") where line.contains("MHD_USE_EPOLL_INTERNAL_THREAD") || line.contains("MHD_USE_POLL_INTERNAL_THREAD") {
                flagLines += 1
                #expect(line.contains("MHD_USE_NO_LISTEN_SOCKET"), "\(line)")
            }
        }
        #expect(flagLines == 2, "both daemon flag sets were checked")
    }

    /// The socket the server binds answers on the port it reports, IPv4 and IPv6 alike, and a
    /// second server on that port is refused with the same error as before.
    @Test(arguments: ["127.0.0.1", "::1"])
    func theServersOwnSocketServesAndHoldsItsPort(host: String) async throws {
        try await withServer(
            configure: { $0.host = host },
            routes: { router in router.add(.get, "/ok", .inline { _ in .text("ok") }) }
        ) { server in
            #expect(server.port > 0)
            if host == "127.0.0.1" {
                let answer = try await blocking { [port = server.port] in try RawClient(port: port).request("GET", "/ok").text }
                #expect(answer == "ok")
            }
            var configuration = server.configuration
            configuration.port = server.port
            let second = HTTPServer(configuration: configuration, router: Router())
            #expect(throws: HTTPServer.StartError.self) { try second.start() }
        }
    }
}
