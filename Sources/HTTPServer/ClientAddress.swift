#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are taken as the IPv4
/// address they carry, so one client has one address whichever socket family it arrived on.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let bytes: [UInt8]

    /// Parses a textual address (`inet_pton` syntax, no zone, no port).
    public init?(parsing text: some StringProtocol) {
        let text = String(text)
        guard !text.isEmpty, text.utf8.count <= Int(INET6_ADDRSTRLEN) else { return nil }
        if text.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
            let bytes = withUnsafeBytes(of: &address) { Array($0) }
            self.init(bytes: bytes)
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
            self.init(bytes: withUnsafeBytes(of: &address) { Array($0) })
        }
    }

    init(bytes: [UInt8]) {
        let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        if bytes.count == 16 && bytes.starts(with: mappedPrefix) {
            self.bytes = Array(bytes[12...])
        } else {
            self.bytes = bytes
        }
    }

    /// The canonical text (`inet_ntop`).
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An IP network in CIDR notation: `10.0.0.0/8`, `2001:db8::/32`; a bare address is a network of
/// one (`/32` or `/128`).
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    /// Parses `ADDRESS/PREFIX` or `ADDRESS`. Nil when the address is not IPv4/IPv6, the prefix is
    /// not a decimal within the family's width, or bits are set past the prefix.
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parsing: parts[0]) else { return nil }
        // `::ffff:10.0.0.0/104` is the IPv4 network 10.0.0.0/8.
        let mapped = parts[0].contains(":") && address.bytes.count == 4
        let width = address.bytes.count * 8
        var length = width
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.count <= 3, parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                var given = Int(parts[1])
            else { return nil }
            if mapped {
                guard given >= 96 else { return nil }
                given -= 96
            }
            guard given <= width else { return nil }
            length = given
        }
        for (index, byte) in address.bytes.enumerated() {
            let keep = max(0, min(8, length - index * 8))
            let mask: UInt8 = keep == 0 ? 0 : ~UInt8(0) << (8 - keep)
            guard byte & ~mask == 0 else { return nil }
        }
        network = address
        prefixLength = length
    }

    /// Whether `address` is inside this network (never across families).
    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (a, n) in zip(address.bytes, network.bytes) where remaining > 0 {
            let keep = min(8, remaining)
            let mask: UInt8 = ~UInt8(0) << (8 - keep)
            if a & mask != n & mask { return false }
            remaining -= keep
        }
        return true
    }

    public var description: String { "\(network)/\(prefixLength)" }
}

/// The reverse proxies whose `X-Forwarded-For` is believed.
public struct TrustedProxies: Sendable, Hashable {
    public var networks: [CIDR]

    public init(_ networks: [CIDR] = []) { self.networks = networks }

    /// Whether `address` is one of the proxies.
    public func contains(_ address: IPAddress) -> Bool { networks.contains { $0.contains(address) } }

    /// The client's address: `peer` itself unless it is a trusted proxy; then, walking the
    /// `X-Forwarded-For` entries from the right (the ones the nearest proxies appended), the first
    /// that is not itself a trusted proxy. An entry that is not an address stops the walk at the
    /// proxy that appended it (what lies left of it cannot be believed); when every entry is a
    /// trusted proxy, the leftmost is the client.
    ///
    /// - Parameter forwardedFor: the values of every `X-Forwarded-For` field, in arrival order.
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        guard !networks.isEmpty, let peerAddress = IPAddress(parsing: peer), contains(peerAddress) else { return peer }
        var client = peerAddress
        let entries = forwardedFor.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        for entry in entries.reversed() {
            guard let address = Self.forwardedAddress(entry) else { break }
            client = address
            if !contains(address) { break }
        }
        return client.description
    }

    /// An entry of `X-Forwarded-For`: an address, optionally `[v6]`, `[v6]:port` or `v4:port`.
    static func forwardedAddress(_ entry: Substring) -> IPAddress? {
        var text = entry.drop { $0 == " " || $0 == "\t" }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || Self.isPort(rest.dropFirst()) && rest.first == ":" else { return nil }
            return IPAddress(parsing: text[text.index(after: text.startIndex)..<close])
        }
        let colons = text.filter { $0 == ":" }.count
        if colons == 1, let colon = text.firstIndex(of: ":") {
            guard Self.isPort(text[text.index(after: colon)...]) else { return nil }
            return IPAddress(parsing: text[..<colon])
        }
        return IPAddress(parsing: text)
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 5 && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }
}
