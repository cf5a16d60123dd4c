import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A one-port HTTP server on loopback that answers each connection by a script, byte by byte:
/// what a hostile endpoint does (an endless body, a trickle, a redirect, silence).
final class HostileServer: Sendable {
    /// What the server does with one connection once the request has arrived; it writes with
    /// `send` (false once the peer is gone).
    typealias Script = @Sendable (_ send: (String) -> Bool, _ sendBytes: ([UInt8]) -> Bool) -> Void

    let port: Int
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let state = Mutex<(requests: [String], bytesSent: Int)>(([], 0))

    init(_ script: @escaping Script) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread { [self] in serve(connection, script) }.start()
            }
        }.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    /// The request heads received so far.
    var requests: [String] { state.withLock { $0.requests } }
    /// Bytes written to clients so far.
    var bytesSent: Int { state.withLock { $0.bytesSent } }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(_ connection: Int32, _ script: Script) {
        defer { close(connection) }
        // The request head (bodies here are small and arrive with it).
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.containsHeadEnd {
            let n = recv(connection, &buffer, buffer.count, 0)
            guard n > 0 else { return }
            head += buffer[0..<n]
        }
        state.withLock { $0.requests.append(String(decoding: head, as: UTF8.self)) }
        let sendBytes: ([UInt8]) -> Bool = { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, sendFlags) }
                guard n > 0 else { return false }
                offset += n
                self.state.withLock { $0.bytesSent += n }
            }
            return true
        }
        script({ sendBytes(Array($0.utf8)) }, sendBytes)
    }
}

/// Writing to a closed peer fails instead of raising SIGPIPE.
#if canImport(Glibc)
    private let sendFlags = Int32(MSG_NOSIGNAL)
#else
    private let sendFlags: Int32 = 0
#endif

extension [UInt8] {
    fileprivate var containsHeadEnd: Bool {
        guard count >= 4 else { return false }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return true
        }
        return false
    }
}
