import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The test client must close each descriptor it opened exactly once: a second `close` of a
/// number another thread has been handed since closes that thread's descriptor (in CI, a test
/// server's listening socket, and libmicrohttpd aborted).
@Suite struct RawClientTests {
    /// A loopback port nothing listens on: bound, read back, released.
    static func refusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A refused connection throws, and nothing closes its descriptor again afterwards. Swift runs
    /// `deinit` when an initializer throws after setting every stored property, so the client
    /// used to close the number in `init` and again in `deinit`; that second `close` is the last
    /// call made and fails with EBADF — unless the number was handed out in between, which is
    /// the race this guards against.
    @Test func aRefusedConnectionClosesItsDescriptorOnce() throws {
        let port = try Self.refusedPort()
        errno = 0
        let client = try? RawClient(port: port, timeoutSeconds: 1)
        let lastError = errno
        #expect(client == nil)
        #expect(lastError != EBADF)
    }
}
