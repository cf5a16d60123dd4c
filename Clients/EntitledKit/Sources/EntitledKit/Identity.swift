import Foundation

#if canImport(Security)
    import Security
#endif

/// Who an app-key client is: its customer id and that customer's token.
public struct StoredIdentity: Sendable, Codable, Hashable {
    public var appUserId: String
    public var token: String
    public var expiresAt: Date
    /// Whether the id is an anonymous customer (`$anon:…`) this install created.
    public var anonymous: Bool
    /// When the token arrived (the device's clock); nil from an older version of the client. The
    /// token is renewed once half its life has passed (``renewsAt``).
    public var receivedAt: Date?

    public init(appUserId: String, token: String, expiresAt: Date, anonymous: Bool, receivedAt: Date? = nil) {
        self.appUserId = appUserId
        self.token = token
        self.expiresAt = expiresAt
        self.anonymous = anonymous
        self.receivedAt = receivedAt
    }

    /// From when the token is renewed: half-way through its life, and at the latest `margin`
    /// seconds before it expires. An expired anonymous token cannot be renewed (the install then
    /// becomes a new anonymous customer), so an app opened once in a while, not only one open in the
    /// token's last minutes, must renew it.
    public func renewsAt(margin: TimeInterval) -> Date {
        let halfLife = receivedAt.map { expiresAt.timeIntervalSince($0) / 2 } ?? 0
        return expiresAt.addingTimeInterval(-max(margin, halfLife))
    }
}

/// Where the identity is kept across launches: the keychain or an app group on Apple platforms,
/// a file or memory elsewhere and in tests.
public protocol IdentityStore: Sendable {
    func load() -> StoredIdentity?
    /// Saves `identity`, or forgets it (nil).
    func save(_ identity: StoredIdentity?)
}

/// Memory only: a new install at each launch (tests, previews).
public final class InMemoryIdentityStore: IdentityStore, @unchecked Sendable {
    private let lock = NSLock()
    private var identity: StoredIdentity?
    public init(_ identity: StoredIdentity? = nil) { self.identity = identity }
    public func load() -> StoredIdentity? { lock.locked { identity } }
    public func save(_ identity: StoredIdentity?) { lock.locked { self.identity = identity } }
}

/// One JSON file, written atomically (e.g. in an app group container, so an extension shares it).
public struct FileIdentityStore: IdentityStore {
    public let url: URL
    public init(url: URL) { self.url = url }

    public func load() -> StoredIdentity? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(StoredIdentity.self, from: data)
    }

    public func save(_ identity: StoredIdentity?) {
        guard let identity else {
            try? FileManager.default.removeItem(at: url)
            return
        }
        guard let data = try? JSONEncoder().encode(identity) else { return }
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? data.write(to: url, options: .atomic)
    }
}

#if canImport(Security)
    /// A generic-password keychain item (kept across reinstalls on iOS; `accessGroup` shares it
    /// with extensions), readable after the first unlock so background refreshes work.
    public struct KeychainIdentityStore: IdentityStore {
        public let service: String
        public let accessGroup: String?

        public init(service: String = "Entitled", accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        private var query: [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: "identity",
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func load() -> StoredIdentity? {
            var query = query
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess, let data = item as? Data else { return nil }
            return try? JSONDecoder().decode(StoredIdentity.self, from: data)
        }

        public func save(_ identity: StoredIdentity?) {
            SecItemDelete(query as CFDictionary)
            guard let identity, let data = try? JSONEncoder().encode(identity) else { return }
            var attributes = query
            attributes[kSecValueData as String] = data
            attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
            SecItemAdd(attributes as CFDictionary, nil)
        }
    }
#endif
