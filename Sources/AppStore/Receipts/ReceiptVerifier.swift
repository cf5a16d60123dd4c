import EntitledCrypto

/// Verifies StoreKit 1 app receipts (`Bundle.main.appStoreReceiptURL`'s base64 contents).
///
/// The PKCS#7 framing and the payload are parsed by ``DERReader`` (never by OpenSSL); OpenSSL checks
/// the signature, and the signer's chain is checked against the configured roots at the receipt's
/// creation date (receipt signing certificates outlive their receipts, not the other way round).
/// Xcode and LocalTesting receipts are signed by a local key: as with signed transactions, only
/// their content is read, and only for apps that accept that environment.
public struct ReceiptVerifier: Sendable {
    /// What a receipt is checked against.
    public struct Configuration: Sendable {
        /// DER roots: by default Apple Root CA (older receipts) and Apple Root CA - G3 (newer ones).
        public var trustedRoots: [[UInt8]]
        public var bundleId: String
        public var environments: Set<AppStoreEnvironment>

        public init(
            trustedRoots: [[UInt8]] = AppleRootCertificates.defaultReceiptRoots, bundleId: String,
            environments: Set<AppStoreEnvironment>
        ) {
            self.trustedRoots = trustedRoots
            self.bundleId = bundleId
            self.environments = environments
        }
    }

    /// Largest base64 receipt accepted (a PKCS#7 container of ``PKCS7/maxBytes``).
    public static let maxBase64Length = PKCS7.maxBytes / 3 * 4 + 4

    public let configuration: Configuration
    private let trustStore: X509TrustStore

    /// - Throws: ``VerificationError/Code/invalidCertificate`` when a root is not a certificate.
    public init(configuration: Configuration) throws(VerificationError) {
        self.configuration = configuration
        do {
            var roots: [X509Certificate] = []
            for der in configuration.trustedRoots { roots.append(try X509Certificate(der: der)) }
            trustStore = try X509TrustStore(roots: roots)
        } catch {
            throw VerificationError(.invalidCertificate, "receipt root: \(error.message)")
        }
    }

    /// A receipt parsed but not yet trusted: its container bytes and payload.
    public struct Decoded: Sendable {
        /// The PKCS#7 container.
        public var der: [UInt8]
        /// The parsed payload (untrusted until ``ReceiptVerifier/check(_:now:)``).
        public var receipt: AppReceipt
    }

    /// Decodes and parses a base64 app receipt without trusting it (which app it claims to be
    /// for decides which verifier checks it).
    /// - Throws: `INVALID_RECEIPT` for anything that is not base64 PKCS#7 signed data with a
    ///   well-formed ASN.1 payload; `RECEIPT_TOO_LARGE` past ``AppReceipt/maxInAppPurchases`` records.
    public static func decode(base64 text: String) throws(VerificationError) -> Decoded {
        try decode(der: try decodeBase64(text))
    }

    /// ``decode(base64:)`` for bytes already decoded.
    public static func decode(der: [UInt8]) throws(VerificationError) -> Decoded {
        do {
            return Decoded(der: der, receipt: try AppReceipt.parse(payload: try signedContent(der)))
        } catch AppReceipt.tooManyInAppPurchases {
            throw VerificationError(.receiptTooLarge, "the receipt has \(AppReceipt.tooManyInAppPurchases.description)")
        } catch {
            throw VerificationError(.invalidReceipt, "the receipt does not parse: \(error.description)")
        }
    }

    /// Verifies and parses a base64 app receipt (``decode(base64:)`` then ``check(_:now:)``).
    public func verify(base64 text: String, now: Int64) throws(VerificationError) -> AppReceipt {
        try check(try Self.decode(base64: text), now: now)
    }

    /// Checks a decoded receipt: environment, signature and chain (unless local), bundle id.
    ///
    /// - Parameter now: epoch milliseconds, the check time for a receipt without a creation date.
    /// - Throws: `INVALID_ENVIRONMENT`, `RECEIPT_SIGNATURE_INVALID` (signature or chain),
    ///   `RECEIPT_WRONG_BUNDLE`.
    public func check(_ decoded: Decoded, now: Int64) throws(VerificationError) -> AppReceipt {
        let receipt = decoded.receipt
        let environment = receipt.environment ?? .production
        guard configuration.environments.contains(environment) else {
            throw VerificationError(.invalidEnvironment, "environment \(environment) is not accepted for this app")
        }
        if !environment.isLocal {
            let check: PKCS7.SignatureCheck
            do {
                check = try PKCS7.verifySignature(der: decoded.der)
            } catch {
                throw VerificationError(.receiptSignatureInvalid, "the receipt's signature does not verify")
            }
            let time = (receipt.creationDate ?? now) / 1_000
            let intermediates = check.certificates.filter { $0 != check.signer }
            if case .failure(let failure) = trustStore.verify(leaf: check.signer, intermediates: intermediates, at: time) {
                throw VerificationError(.receiptSignatureInvalid, "the receipt's signer is not trusted: \(failure)")
            }
        }
        guard receipt.bundleId == configuration.bundleId else {
            throw VerificationError(.receiptWrongBundle, "the receipt is for another app")
        }
        return receipt
    }

    /// Standard base64 (line breaks allowed), bounded; `INVALID_RECEIPT` otherwise.
    public static func decodeBase64(_ text: String) throws(VerificationError) -> [UInt8] {
        guard text.utf8.count <= maxBase64Length + maxBase64Length / 64 * 2 else {
            throw VerificationError(.invalidReceipt, "the receipt is larger than \(PKCS7.maxBytes) bytes")
        }
        let compact = text.filter { !$0.isWhitespace }
        guard !compact.isEmpty, let bytes = Base64.decode(compact) else {
            throw VerificationError(.invalidReceipt, "receiptData is not base64")
        }
        return bytes
    }

    static let signedDataOID = "1.2.840.113549.1.7.2"
    static let dataOID = "1.2.840.113549.1.7.1"

    /// The content of a PKCS#7 signed-data container: `ContentInfo { signedData, [0] SignedData {
    /// version, digestAlgorithms, ContentInfo { data, [0] OCTET STRING }, … } }`.
    public static func signedContent(_ der: [UInt8]) throws(DERError) -> [UInt8] {
        let outer = try DERReader.single(der).expect(DERElement.sequence).children()
        guard outer.count == 2, try outer[0].objectIdentifier() == signedDataOID else {
            throw DERError("not PKCS#7 signed data")
        }
        let signedData = try outer[1].expect(DERElement.contextZero).onlyChild().expect(DERElement.sequence).children()
        guard signedData.count >= 3 else { throw DERError("short SignedData") }
        let contentInfo = try signedData[2].expect(DERElement.sequence).children()
        guard contentInfo.count == 2, try contentInfo[0].objectIdentifier() == dataOID else {
            throw DERError("no embedded data")
        }
        return try contentInfo[1].expect(DERElement.contextZero).onlyChild().octets()
    }
}

/// `SKPaymentTransaction.transactionReceipt`: an old-style (NeXTSTEP) plist whose `purchase-info` is
/// another base64 plist holding `transaction-id`. Its signature (Apple's pre-2013 format) is not
/// checked: only the transaction id is read, to look the purchase up at Apple.
public enum LegacyTransactionReceipt {
    /// Largest decoded receipt accepted.
    public static let maxBytes = 64 * 1024

    /// The transaction id, or nil when `bytes` are not a legacy transaction receipt.
    public static func transactionId(decoded bytes: [UInt8]) -> String? {
        guard bytes.count <= maxBytes, let info = value(of: "purchase-info", in: bytes),
            let inner = Base64.decode(info.filter { !$0.isWhitespace }), inner.count <= maxBytes,
            let id = value(of: "transaction-id", in: inner), !id.isEmpty, id.count <= 64,
            id.utf8.allSatisfy({ (48...57).contains($0) })
        else { return nil }
        return id
    }

    /// Whether decoded receipt bytes look like a plist rather than DER (`{` after optional whitespace).
    public static func looksLikePlist(_ bytes: [UInt8]) -> Bool {
        bytes.first(where: { ![9, 10, 13, 32].contains($0) }) == UInt8(ascii: "{")
    }

    /// The quoted value of `"key" = "value";` in an old-style plist dictionary.
    static func value(of key: String, in bytes: [UInt8]) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var rest = Substring(text)
        let quotedKey = "\"\(key)\""
        while let range = rest.range(of: quotedKey) {
            var after = rest[range.upperBound...].drop(while: \.isWhitespace)
            guard after.first == "=" else {
                rest = rest[range.upperBound...]
                continue
            }
            after = after.dropFirst().drop(while: \.isWhitespace)
            guard after.first == "\"" else { return nil }
            let body = after.dropFirst()
            guard let end = body.firstIndex(of: "\"") else { return nil }
            return String(body[..<end])
        }
        return nil
    }
}
