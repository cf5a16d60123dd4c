/// One offer signature handed out: which customer, which offer, when (table `offer_signatures`).
public struct OfferSignatureRecord: Sendable, Hashable {
    public var appUserId: String
    public var bundleId: String
    public var productId: String
    /// nil for an introductory-offer eligibility signature.
    public var offerId: String?
    /// `promotional`, `introductoryEligibility` or `winBack`.
    public var kind: String
    /// `v1` or `jws`.
    public var format: String
    /// The signature's nonce (a lowercase UUID), which StoreKit puts in the resulting transaction.
    public var nonce: String
    /// Epoch milliseconds.
    public var signedAt: Int64

    public init(
        appUserId: String, bundleId: String, productId: String, offerId: String?, kind: String, format: String, nonce: String,
        signedAt: Int64
    ) {
        self.appUserId = appUserId
        self.bundleId = bundleId
        self.productId = productId
        self.offerId = offerId
        self.kind = kind
        self.format = format
        self.nonce = nonce
        self.signedAt = signedAt
    }
}

/// The log of offer signatures, kept beside the ledger (append-only; never read on the hot path).
public protocol OfferSignatureLog: Sendable {
    /// Appends `record`, durably, before the signature is answered.
    func recordOfferSignature(_ record: OfferSignatureRecord) async throws

    /// The customer's most recent signatures, newest first, at most `limit`.
    func offerSignatures(appUserId: String, limit: Int) async throws -> [OfferSignatureRecord]

    /// Deletes the signatures made before `signedBefore`, oldest first, in batches of
    /// ``offerSignaturePurgeBatch`` (each its own transaction); returns how many it deleted.
    func purgeOfferSignatures(signedBefore: Int64) async throws -> Int
}

/// Rows deleted per transaction by ``OfferSignatureLog/purgeOfferSignatures(signedBefore:)``.
public let offerSignaturePurgeBatch = 1000


extension SessionBackedStore {
    func recordOfferSignature(_ record: OfferSignatureRecord) async throws {
        _ = try await write { session in
            try session.query(
                """
                INSERT INTO offer_signatures (app_user_id, bundle_id, product_id, offer_id, kind, format, nonce, signed_at)
                VALUES (\(record.appUserId), \(record.bundleId), \(record.productId), \(record.offerId), \(record.kind), \(record.format), \(record.nonce), \(record.signedAt))
                """)
        }
    }

    func offerSignatures(appUserId: String, limit: Int) async throws -> [OfferSignatureRecord] {
        try await read { session in
            try session.rows(
                """
                SELECT app_user_id, bundle_id, product_id, offer_id, kind, format, nonce, signed_at
                FROM offer_signatures WHERE app_user_id = \(appUserId) ORDER BY id DESC LIMIT \(Int64(max(0, limit)))
                """, as: OfferSignatureColumns.self
            ).map { row in
                OfferSignatureRecord(
                    appUserId: row.appUserId, bundleId: row.bundleId, productId: row.productId, offerId: row.offerId, kind: row.kind,
                    format: row.format, nonce: row.nonce, signedAt: row.signedAt)
            }
        }
    }

    func purgeOfferSignatures(signedBefore: Int64) async throws -> Int {
        // Rows are appended in time order: walk them by id (the primary key), oldest first, and
        // stop at the first one still kept — no index on the time is needed.
        var deleted = 0
        while true {
            let batch = try await write { session -> (count: Int, more: Bool) in
                let rows = try session.rows(
                    "SELECT id, signed_at FROM offer_signatures ORDER BY id LIMIT \(Int64(offerSignaturePurgeBatch))",
                    as: SignatureAge.self)
                let old = rows.prefix { $0.signedAt < signedBefore }
                guard let last = old.last else { return (0, false) }
                try session.query("DELETE FROM offer_signatures WHERE id <= \(last.id)")
                return (old.count, old.count == rows.count && rows.count == offerSignaturePurgeBatch)
            }
            deleted += batch.count
            if !batch.more { return deleted }
        }
    }
}

/// A stored offer signature's columns.
private struct OfferSignatureColumns: Decodable {
    var appUserId: String
    var bundleId: String
    var productId: String
    var offerId: String?
    var kind: String
    var format: String
    var nonce: String
    var signedAt: Int64
}

/// A stored offer signature's id and time, for the purge.
private struct SignatureAge: Decodable {
    var id: Int64
    var signedAt: Int64
}
