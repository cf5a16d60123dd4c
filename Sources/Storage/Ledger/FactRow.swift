import Entitlements

/// A fact as the `facts` table holds it: the engine's fact, its JSON text, the kind and key
/// columns, and the text that identifies it — the signed text it came from (its digest is the
/// fact's key with the kind, so a replay is a no-op) or, for a fact without a signed form (V1 and
/// receipt data), its ``Entitlements/Fact/identity``, so that no change to the encoder makes a
/// replay new. Storage's own plumbing: callers hand in `Fact`s.
///
/// Made where the fact is handed in (a request's thread), not on the ledger's single writer: the
/// encoding and the digest are most of a fact's cost.
struct FactRow: Sendable {
    var fact: Fact
    /// `facts.kind`.
    var kind: String
    /// `facts.jws`: the signed text, the identity, or (a signed kind handed in without its text)
    /// the JSON text.
    var signed: String
    /// `facts.signed_packed`: `signed` packed (``SignedPart``) when it is a compact JWS; set by
    /// ``FactRow/pack(_:body:)`` once the message's other facts are known.
    var packed: [SignedPart]? = nil
    /// Lower-case hex SHA-256 of what `signed` signs (``FactDigest``); `facts.jws_sha256` holds its
    /// bytes (``FactDigest/stored(_:)``).
    var digest: String
    /// Where `signed`'s signing input ends (its UTF-8 length when it is no compact JWS), found with
    /// the digest: packing splits the text there without scanning it again.
    var signingInputEnd: Int
    /// The fact's JSON, stored compressed (``payloadPacked``; see ``Ledger/factValues(_:notificationID:signed:signedPacked:appAccountToken:environment:bundleId:receivedAt:)``).
    var payload: String
    /// `payload` compressed (``FactPayload``), when made on the caller's thread by ``pack(_:body:)``.
    var payloadPacked: [UInt8]? = nil
    /// Whether ``payloadPacked`` holds the literals of ``packed`` too (``SignedTextFormat``, format 3).
    var literalsWithFact = false
    var transactionId: String?
    var originalTransactionId: String?
    /// The token linking a fact to its customer (normalized when stored). An app transaction has
    /// none of its own: it gets its claiming customer's.
    var appAccountToken: String?
    var signedDate: Int64

    init(_ fact: Fact, signed: String?, projector: Projector) {
        self.fact = fact
        payload = projector.encode(fact)
        self.signed = fact.identity ?? signed ?? payload
        (digest, signingInputEnd) = FactDigest.hexAndSigningInputEnd(self.signed)
        kind = fact.ledgerKind
        originalTransactionId = fact.ledgerOriginalTransactionId
        signedDate = fact.date
        switch fact {
        case .transaction(let f):
            transactionId = f.transactionId
            appAccountToken = f.appAccountToken
        case .notification(let f):
            transactionId = f.transactionId
        case .receiptEntry(let f):
            transactionId = f.transactionId
            appAccountToken = f.appAccountToken
        case .v1Notification(let f):
            transactionId = f.transactionId
        case .consumableSpend(let f):
            appAccountToken = f.appAccountToken
        case .promotionalGrant(let f):
            appAccountToken = f.appAccountToken
        case .promotionalGrantEnd(let f):
            appAccountToken = f.appAccountToken
        case .playSubscription(let f):
            transactionId = f.purchaseToken
            // The app passes the customer's appAccountToken to setObfuscatedAccountId: it links as Apple's does.
            appAccountToken = f.obfuscatedExternalAccountId
        case .playProduct(let f):
            transactionId = f.purchaseToken
            appAccountToken = f.obfuscatedExternalAccountId
        case .playVoided(let f):
            transactionId = f.purchaseToken
        case .playOrder(let f):
            transactionId = f.purchaseToken
        case .renewalInfo, .appTransaction, .pendingRenewal:
            break
        }
    }
}

extension FactRow {
    /// The fact's key as a reference names it (``SignedTextPacker/encode(_:headerIDs:literalsWithFact:ownSignature:)``).
    var referenceKey: String { kind + " " + digest }

    /// Packs each row's signed text, and the message's body, with references to the signed texts
    /// of the other facts of the same message (a notification's payload carries its transaction's
    /// and renewal's JWS; the body is the notification's), on the caller's thread.
    /// Also compresses each row's JSON and its signed text's literals.
    static func pack(_ rows: inout [FactRow], body: [UInt8]) throws -> PackedMessage {
        // Each text split once, for the siblings and for its own packing.
        let texts = rows.indices.compactMap { index -> (index: Int, text: [UInt8], split: SignedTextPacker.Split)? in
            guard rows[index].fact.identity == nil else { return nil }
            let text = Array(rows[index].signed.utf8)
            return SignedTextPacker.split(text, signingInputEnd: rows[index].signingInputEnd).map { (index, text, $0) }
        }
        let siblings = SignedSiblings(split: texts.map { (rows[$0.index].kind, $0.text, $0.split, rows[$0.index].digest) })
        var headers: Set<JWSHeader> = []
        var made: [JWSHeader] = []
        for (index, _, split) in texts {
            rows[index].packed = SignedTextPacker.packJWS(split, siblings: siblings, headers: &made).map { [$0] }
            if let packed = rows[index].packed { SignedTextPacker.headers(in: packed, into: &headers) }
        }
        for index in rows.indices {
            let literals = try rows[index].packed.map(SignedTextPacker.literals)
            rows[index].payloadPacked = try FactPayload.encode(rows[index].payload, literals: literals)
            rows[index].literalsWithFact = literals != nil
        }
        var message = PackedMessage(headers: headers)
        guard !siblings.entries.isEmpty else { return message }
        let parts = SignedTextPacker.referencing(body, siblings: siblings)
        if parts.contains(where: { if case .reference = $0 { true } else { false } }) { message.body = parts }
        return message
    }
}

/// What packing a message gives besides its rows: its body packed (nil: stored as it is, when it
/// refers to none of its facts) and the digests of the JWS headers its rows use.
struct PackedMessage: Sendable {
    /// Each distinct header, to be given its `jws_headers` id.
    var headers: Set<JWSHeader>
    var body: [SignedPart]? = nil
}

extension Fact {
    /// The kind the ledger stores a fact under (`facts.kind`, half of its key).
    package var ledgerKind: String {
        switch self {
        case .transaction: "transaction"
        case .renewalInfo: "renewal"
        case .notification: "notification"
        case .appTransaction: "appTransaction"
        case .receiptEntry: "receipt"
        case .pendingRenewal: "pendingRenewal"
        case .v1Notification: "v1Notification"
        case .consumableSpend: Fact.consumableSpendKind
        case .promotionalGrant: Fact.promotionalGrantKind
        case .promotionalGrantEnd: Fact.promotionalGrantEndKind
        case .playSubscription: "playSubscription"
        case .playProduct: "playProduct"
        case .playVoided: "playVoided"
        case .playOrder: "playOrder"
        }
    }

    /// The subscription a fact belongs to (`facts.original_transaction_id`); nil for an app transaction.
    package var ledgerOriginalTransactionId: String? {
        switch self {
        case .transaction(let f): f.originalTransactionId
        case .renewalInfo(let f): f.originalTransactionId
        case .notification(let f): f.originalTransactionId
        case .appTransaction: nil
        case .receiptEntry(let f): f.originalTransactionId
        case .pendingRenewal(let f): f.originalTransactionId
        case .v1Notification(let f): f.originalTransactionId
        case .consumableSpend: nil
        case .promotionalGrant, .promotionalGrantEnd: nil
        // A Play purchase is filed under its purchase token, as an Apple subscription under its
        // originalTransactionId.
        case .playSubscription(let f): f.purchaseToken
        case .playProduct(let f): f.purchaseToken
        case .playVoided(let f): f.purchaseToken
        case .playOrder(let f): f.purchaseToken
        }
    }

    /// `facts.kind` of the server's own facts about a customer — consumable spends, promotional
    /// grants and their ends — which erasure deletes with the customer (Apple's facts stay).
    package static let consumableSpendKind = "consumableSpend"
    package static let promotionalGrantKind = "promotionalGrant"
    package static let promotionalGrantEndKind = "promotionalGrantEnd"
}
