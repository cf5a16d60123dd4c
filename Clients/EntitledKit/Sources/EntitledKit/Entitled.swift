import Foundation

/// The Purchases-SDK entry point for an app without a backend: an app key, an anonymous customer
/// created once per install (and kept in an ``IdentityStore``), log in and out, purchases with
/// offers, and a stream of every answer. ``EntitledClient`` with a token or an API key stays for
/// apps and backends that mint their own tokens.
///
/// ```swift
/// let entitled = Entitled.configure(baseURL: url, appKey: "app_…", bundleId: "com.example.app",
///                                   store: StoreKitGateway())
/// for await answer in entitled.customerUpdates { model.show(answer) }
/// ```
public actor Entitled {
    /// The instance the last ``configure(baseURL:appKey:bundleId:store:identityStore:configuration:)`` made.
    public static var shared: Entitled? { sharedBox.value }
    private static let sharedBox = LockedValue<Entitled?>(nil)

    /// Configures the shared instance: app key mode. `store` (``StoreKitGateway`` in an app) is
    /// needed for purchases and restores only.
    @discardableResult
    public static func configure(
        baseURL: URL, appKey: String, bundleId: String = Bundle.main.bundleIdentifier ?? "",
        store: (any StoreGateway)? = nil, identityStore: any IdentityStore = Entitled.defaultIdentityStore(),
        configuration: EntitledClient.Configuration = EntitledClient.Configuration()
    ) -> Entitled {
        let entitled = Entitled(
            baseURL: baseURL, appKey: appKey, bundleId: bundleId, store: store, identityStore: identityStore,
            configuration: configuration)
        sharedBox.value = entitled
        return entitled
    }

    /// The keychain where there is one, else a file in the caches directory.
    public static func defaultIdentityStore() -> any IdentityStore {
        #if canImport(Security)
            return KeychainIdentityStore()
        #else
            let directory = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
                ?? FileManager.default.temporaryDirectory
            return FileIdentityStore(url: directory.appendingPathComponent("Entitled/identity.json"))
        #endif
    }

    public nonisolated let baseURL: URL
    public nonisolated let bundleId: String
    public nonisolated let store: (any StoreGateway)?
    private let session: AppKeySession
    private let configuration: EntitledClient.Configuration
    private let updates: Broadcaster<CustomerAnswer>
    private var current: (client: EntitledClient, purchases: Purchases?)?
    private var listening = false

    public init(
        baseURL: URL, appKey: String, bundleId: String, store: (any StoreGateway)?, identityStore: any IdentityStore,
        configuration: EntitledClient.Configuration = EntitledClient.Configuration()
    ) {
        self.baseURL = baseURL
        self.bundleId = bundleId
        self.store = store
        var configuration = configuration
        let updates = Broadcaster<CustomerAnswer>()
        self.updates = updates
        let earlier = configuration.onAnswer
        configuration.onAnswer = { answer in
            earlier?(answer)
            updates.yield(answer)
        }
        self.configuration = configuration
        session = AppKeySession(baseURL: baseURL, appKey: appKey, store: identityStore, configuration: configuration)
    }

    /// Every answer from now on: after purchases, refreshes, restores, logins and the
    /// transactions `Transaction.updates` hands over. Each access is a new subscriber.
    public nonisolated var customerUpdates: AsyncStream<CustomerAnswer> { updates.subscribe() }

    /// The customer's id (an anonymous `$anon:…` one until ``logIn(_:token:)``); creates the
    /// anonymous customer on first use.
    public var appUserId: String {
        get async throws { try await session.current().appUserId }
    }

    /// The client for the current customer (token mode, the token kept fresh by the app key session).
    public func client() async throws -> EntitledClient {
        try await parts().client
    }

    /// The customer's answer (cached while fresh; ``EntitledClient/customer(_:)``).
    public func customer() async throws -> CustomerAnswer { try await client().customer() }

    /// Asks the server now, bypassing every cache.
    @discardableResult
    public func refresh() async throws -> CustomerAnswer { try await client().refresh() }

    /// Whether the customer has `entitlement` now (false when no usable answer is at hand).
    public func isEntitled(_ entitlement: String) async -> Bool {
        guard let client = try? await client() else { return false }
        return await client.isEntitled(entitlement)
    }

    /// Merges this install's anonymous customer into `appUserId` and continues as it. `token`: a
    /// customer token the app's backend minted for `appUserId` (nil only where the server sets
    /// `allowAppKeyLogin`).
    @discardableResult
    public func logIn(_ appUserId: String, token: String?) async throws -> CustomerAnswer {
        let answer = try await session.logIn(appUserId, token: token)
        await replaceParts()
        updates.yield(answer)
        return answer
    }

    /// Forgets the customer: the next call creates a new anonymous one.
    public func logOut() async {
        await session.logOut()
        await replaceParts()
    }

    /// Buys `productID`, with `offer` signed by the server (``Purchases/purchase(productID:offer:)``).
    public func purchase(productID: String, offer: PurchaseOffer? = nil) async throws -> PurchaseOutcome {
        try await purchases().purchase(productID: productID, offer: offer)
    }

    /// The customer's offering with its StoreKit products, when the paywall is shown
    /// (``Purchases/offerings(_:)``: the read records an experiment's exposure).
    public func offerings(_ context: OfferingContext = OfferingContext()) async throws -> ResolvedOffering {
        try await purchases().offerings(context)
    }

    /// Buys `package`'s product (``Purchases/purchase(package:offer:)``).
    public func purchase(package: ResolvedOffering.Package, offer: PurchaseOffer? = nil) async throws -> PurchaseOutcome {
        try await purchases().purchase(package: package, offer: offer)
    }

    /// Posts what StoreKit holds for the customer and answers its state (``Purchases/restore()``).
    public func restore() async throws -> RestoreOutcome { try await purchases().restore() }

    /// At launch: delivers what an earlier launch could not, listens to `Transaction.updates`, restores.
    public func launch() async throws -> RestoreOutcome {
        listening = true
        return try await purchases().launch()
    }

    /// The store is missing: ``configure(baseURL:appKey:bundleId:store:identityStore:configuration:)`` had none.
    public struct NoStore: Error, Sendable {}

    private func purchases() async throws -> Purchases {
        guard let purchases = try await parts().purchases else { throw NoStore() }
        return purchases
    }

    private func parts() async throws -> (client: EntitledClient, purchases: Purchases?) {
        let id = try await session.current().appUserId
        if let current, current.client.credentials.appUserId == id { return current }
        await replaceParts()
        let session = session
        let client = EntitledClient(
            baseURL: baseURL, credentials: .customer(appUserId: id) { try await session.token(for: id) },
            configuration: configuration)
        let purchases = store.map { Purchases(client: client, store: $0, bundleId: bundleId) }
        if listening { await purchases?.startListening() }
        current = (client, purchases)
        return (client, purchases)
    }

    private func replaceParts() async {
        await current?.purchases?.stopListening()
        current = nil
    }
}

extension EntitledClient.Credentials {
    /// The customer a token client calls as (nil with an API key).
    public var appUserId: String? {
        if case .customer(let id, _) = self { return id }
        return nil
    }
}

/// A value behind a lock (no `Synchronization` at the client's platform floor).
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.locked { stored } }
        set { lock.locked { stored = newValue } }
    }
}

extension NSLock {
    /// Runs `body` holding the lock (Foundation's `withLock` needs iOS 16 / macOS 13 on Apple platforms).
    func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// Hands each value to every current subscriber's `AsyncStream`.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuations: [UUID: AsyncStream<Element>.Continuation] = [:]

    func subscribe() -> AsyncStream<Element> {
        let id = UUID()
        // The closure runs before `init` returns (`makeStream` needs the Swift 5.9 runtime).
        return AsyncStream(bufferingPolicy: .bufferingNewest(16)) { continuation in
            lock.locked { continuations[id] = continuation }
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.lock.locked { self.continuations.removeValue(forKey: id) }
            }
        }
    }

    func yield(_ element: Element) {
        for continuation in lock.locked({ Array(continuations.values) }) { continuation.yield(element) }
    }
}
