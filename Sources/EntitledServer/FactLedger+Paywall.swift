import Storage

/// What the paywall reads and the app tells about its customer: customer attributes, offerings.
extension FactLedger {
    /// Sets or removes the customer's attributes (``CustomerAttributeStore``), creating the
    /// customer when missing.
    public func setAttributes(
        appUserId: String, changes: [String: String?], maxCount: Int, now: Int64
    ) async throws(StorageError) -> AttributeWrite {
        try await mapped {
            _ = try await store.customer(appUserId: appUserId, createIfMissing: true, projector: projector, now: now)
            return try await store.setAttributes(appUserId: appUserId, changes: changes, maxCount: maxCount, now: now)
        }
    }

    /// The customer's attributes; nil when there is no such customer.
    public func attributes(appUserId: String) async throws(StorageError) -> [CustomerAttribute]? {
        try await mapped { try await store.attributes(appUserId: appUserId) }
    }

    /// ``attributes(appUserId:)`` on the calling thread when the store can read at once (an HTTP
    /// poll thread must not wait), no such customer read as none; nil means "use the asynchronous
    /// call".
    public func attributesNow(appUserId: String) throws(StorageError) -> [CustomerAttribute]? {
        do {
            guard case .done(let attributes) = try store.attributesNow(appUserId: appUserId) else { return nil }
            return attributes ?? []
        } catch {
            throw Self.storageError(error)
        }
    }

    /// The number of the offerings' latest change (``OfferingStore``).
    public func paywallVersion() async throws(StorageError) -> Int64 {
        try await mapped { try await store.paywallVersion() }
    }

    /// The logged changes that named offering `id`, newest first (``OfferingStore``).
    public func paywallChanges(subject id: String, limit: Int) async throws(StorageError) -> [PaywallChangeRecord] {
        try await mapped { try await store.paywallChanges(subject: id, limit: limit) }
    }

    /// The offerings, the current one and the targeting rules as stored.
    public func paywall() async throws(StorageError) -> PaywallSnapshot {
        try await mapped { try await store.paywall() }
    }
}
