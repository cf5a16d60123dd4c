/// Stored JSON in the ledger (schema version 16): a fact's JSON (`facts.payload_packed`) and the
/// JSON around the signatures of its signed text (``SignedPart`` literals, `facts.signed_packed`
/// format 2), deflated with a preset dictionary.
///
/// Stored as `[dictionary id][length][bytes]` (varints): dictionary 0 means the bytes are the text as
/// it is (what deflate would not make smaller), any other id names the ``LedgerDictionary`` the text
/// was deflated with (``Deflate``), `length` the text's size (at most ``maxLength``), which
/// decompression must give exactly. A caller may add `context` to the dictionary — bytes it has
/// anyway when it reads the row (the signed text's literals are deflated with the row's own fact
/// JSON after the dictionary: the values Apple signed are mostly the fact's) — and must give the
/// same context to read it back.
enum CompressedText {
    /// The longest text stored compressed: a larger length is corruption, not an allocation.
    static let maxLength = 16 << 20

    /// `text` as stored: deflated with the current dictionary and `context`, or as it is when that is not smaller.
    static func encode(_ text: [UInt8], context: [UInt8] = []) throws -> [UInt8] {
        guard text.count <= maxLength else { throw StorageError(.invalidArgument, "text too large to store", detail: "\(text.count) bytes") }
        var out: [UInt8] = []
        let id = LedgerDictionary.current
        guard let dictionary = LedgerDictionary.bytes(id) else { throw StorageError(.internal, "no dictionary \(id)") }
        let deflated = try Deflate.compress(text, dictionary: dictionary + context)
        let stored = deflated.count < text.count
        Varint.write(stored ? id : 0, to: &out)
        Varint.write(UInt64(text.count), to: &out)
        out += stored ? deflated : text
        return out
    }

    /// The text `stored` holds; `context` must be the one it was encoded with.
    /// - Throws: `DATA_CORRUPT` for anything but a well-formed row.
    static func decode(_ stored: ArraySlice<UInt8>, context: [UInt8] = []) throws -> [UInt8] {
        var cursor = ByteCursor(data: Array(stored), offset: 0)
        let id = try cursor.varint()
        let length = try cursor.varint()
        guard length <= UInt64(maxLength) else { throw corrupt("length \(length) above the limit") }
        let rest = cursor.data[cursor.offset...]
        guard id != 0 else {
            guard rest.count == Int(length) else { throw corrupt("stored length \(rest.count), expected \(length)") }
            return Array(rest)
        }
        guard let dictionary = LedgerDictionary.bytes(id) else { throw corrupt("unknown dictionary \(id)") }
        return try Deflate.decompress(rest, dictionary: dictionary + context, count: Int(length))
    }

    static func corrupt(_ what: String) -> StorageError {
        StorageError(.corrupt, "stored text cannot be decompressed", detail: what)
    }
}

/// The preset dictionaries stored JSON is deflated with, by id. A dictionary once used is never
/// changed (rows name it): a better one is added under a new id and becomes ``current``; rows
/// keep theirs until rewritten.
enum LedgerDictionary {
    /// The id new rows are written with.
    static let current: UInt64 = 1

    /// The dictionary `id` names; nil for one this binary does not know (a newer binary's).
    static func bytes(_ id: UInt64) -> [UInt8]? {
        id == 1 ? first : nil
    }

    /// Dictionary 1: Apple's field names and typical values (its V2 notification, transaction and
    /// renewal payloads, in the order Apple writes their members), then the engine's facts as the
    /// projectors write them (sorted keys). Rarer members first: deflate codes nearer matches
    /// (the end) in fewer bits.
    static let first: [UInt8] = Array(
        #"""
        "revocationDate":,"revocationReason":0,"revocationType":"REFUND_FULL","isUpgraded":true,"offerType":1,\#
        "offerIdentifier":"","offerDiscountType":"FREE_TRIAL","PAY_AS_YOU_GO","PAY_UP_FRONT","offerPeriod":"P1M",\#
        "expirationIntent":1,"isInBillingRetryPeriod":false,"gracePeriodExpiresDate":,"priceIncreaseStatus":0,\#
        "eligibleWinBackOfferIds":[],"renewalPrice":,"FAMILY_SHARED","Non-Consumable","Consumable",\#
        "Non-Renewing Subscription","RENEWAL","DID_CHANGE_RENEWAL_PREF","DID_CHANGE_RENEWAL_STATUS",\#
        "AUTO_RENEW_ENABLED","DID_FAIL_TO_RENEW","GRACE_PERIOD","BILLING_RETRY","EXPIRED","VOLUNTARY",\#
        "GRACE_PERIOD_EXPIRED","OFFER_REDEEMED","PRICE_INCREASE","REFUND","REFUND_DECLINED","REFUND_REVERSED",\#
        "CONSUMPTION_REQUEST","RENEWAL_EXTENDED","REVOKE","TEST","ONE_TIME_CHARGE","RESUBSCRIBE","UPGRADE",\#
        "DOWNGRADE","EUR","GBP","JPY",{"fact":{"cancellationDate":,"cancellationReason":,"isInIntroOfferPeriod":false,\#
        "isTrialPeriod":false,"promotionalOfferId":"","offerCodeRefName":"","receiptDate":,"priceConsentStatus":,\#
        "revocationType":"","subscriptionGroupId":"","webOrderLineItemId":"","storefront":"","storefrontId":"",\#
        "transactionReason":"purchase","price":,"currency":"","offerType":"introductory","offerDiscountType":"freeTrial",\#
        "ownership":"familyShared","productType":"nonConsumable","Sandbox"},"kind":"appTransaction"}{"notificationType":"DID_RENEW",\#
        "subtype":"AUTO_RENEW_DISABLED","notificationUUID":"","data":{"appAppleId":,"bundleId":"",\#
        "bundleVersion":"","environment":"Sandbox","signedTransactionInfo":"","signedRenewalInfo":"",\#
        "status":1},"version":"2.0","signedDate":{"transactionId":"","originalTransactionId":"","webOrderLineItemId":"",\#
        "bundleId":"","productId":"","subscriptionGroupIdentifier":"","purchaseDate":,"originalPurchaseDate":,\#
        "expiresDate":,"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"","inAppOwnershipType":"PURCHASED",\#
        "signedDate":,"environment":"Production","transactionReason":"PURCHASE","storefront":"USA",\#
        "storefrontId":"143441","price":,"currency":"USD","appTransactionId":"{"originalTransactionId":"",\#
        "autoRenewProductId":"","productId":"","autoRenewStatus":1,"renewalPrice":,"currency":"USD",\#
        "signedDate":,"environment":"Production","recentSubscriptionStartDate":,"renewalDate":,"appTransactionId":"{"fact":{"environment":"Production",\#
        "notificationUUID":"","originalTransactionId":"","productId":"","signedDate":,"subtype":"INITIAL_BUY",\#
        "transactionId":"","type":"SUBSCRIBED"},"kind":"notification"}{"fact":{"autoRenewStatus":true,\#
        "eligibleWinBackOfferIds":[],"environment":"Production","originalTransactionId":"","productId":"",\#
        "signedDate":},"kind":"renewalInfo"}{"fact":{"appAccountToken":"","environment":"Production",\#
        "expiresDate":,"isUpgraded":false,"originalTransactionId":"","ownership":"purchased","productId":"",\#
        "productType":"autoRenewable","purchaseDate":,"quantity":1,"signedDate":,"transactionId":""},\#
        "kind":"transaction"}
        """#.utf8)
}

/// A fact's JSON as stored (schema version 16): `facts.payload_packed`, the JSON compressed
/// (``CompressedText``, no context), with `facts.payload` then `''`; rows written before version 16 keep
/// the text in `payload` (and `payload_packed` NULL) until the rewrite reaches them.
enum FactPayload {
    static func encode(_ json: String) throws -> [UInt8] { try CompressedText.encode(Array(json.utf8)) }

    /// The JSON of a row's `payload` (column `text`) and `payload_packed` (column `packed`).
    /// A fact's JSON columns, as every query that reads one names them.
    struct Columns: Decodable {
        var payload: String
        var payloadPacked: [UInt8]?
    }

    /// The JSON of the row's `payload` and `payload_packed` columns.
    static func bytes(_ row: SQLRow) throws -> [UInt8] {
        let columns = try row.decode(Columns.self)
        return try bytes(payload: columns.payload, packed: columns.payloadPacked)
    }

    /// The JSON of a fact whose `payload` and `payload_packed` are these.
    static func bytes(payload: String, packed: [UInt8]?) throws -> [UInt8] {
        guard let packed else { return Array(payload.utf8) }
        return try CompressedText.decode(packed[...])
    }

    static func text(_ row: SQLRow) throws -> String {
        let columns = try row.decode(Columns.self)
        guard let stored = columns.payloadPacked else { return columns.payload }
        return String(decoding: try CompressedText.decode(stored[...]), as: UTF8.self)
    }
}
