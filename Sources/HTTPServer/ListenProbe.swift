#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension HTTPServer {
    /// Checks that `host:port` can be listened on now, by binding a socket and closing it, so
    /// that a start that would fail there stops before it creates or opens anything (the
    /// database). Port 0 always can. The error names the address, the system's reason and what to
    /// do. A race with another process binding in between is still caught by ``start()``.
    public static func checkCanListen(host: String, port: Int) throws(StartError) {
        guard port != 0 else { return }
        let host = host == "localhost" ? "127.0.0.1" : host
        let ipv6 = host.contains(":")
        let descriptor = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var yes: Int32 = 1
        // As the server binds: a port left in TIME_WAIT by a previous run is free.
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        /// bind(2) on `address`, a sockaddr_in or sockaddr_in6.
        func bound<Address>(_ address: inout Address) -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
        let result: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return }
            result = bound(&address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return }
            result = bound(&address)
        }
        guard result != 0 else { return }
        let code = errno
        let reason = String(cString: strerror(code))
        let hint = switch code {
        case EADDRINUSE: "another process listens there: stop it, or choose another address with --listen HOST:PORT"
        case EACCES: "ports below 1024 need CAP_NET_BIND_SERVICE: choose another with --listen HOST:PORT"
        case EADDRNOTAVAIL: "no interface of this machine has that address: choose another with --listen HOST:PORT"
        default: "choose another address with --listen HOST:PORT"
        }
        throw StartError(description: "cannot listen on \(host):\(port): \(reason) (\(hint))")
    }
}
