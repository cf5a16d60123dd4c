import AppStore
import EntitledCrypto
import Foundation
import Synchronization

/// A certificate authority built the way Apple's is: P-256 root → intermediate carrying
/// 1.2.840.113635.100.6.2.1 → leaf carrying 1.2.840.113635.100.6.11.1, with fresh keys.
///
/// For tests, benchmarks and the simulator. Options produce the broken variants the verifier must
/// reject (missing OIDs, expired certificates, …).
public struct TestCertificateAuthority: Sendable {
    /// How to build the chain.
    public struct Options: Sendable {
        /// Validity of root and intermediate, seconds since 1970. Default 2020-01-01 … 2040-01-01.
        public var caValidity: ClosedRange<Int64>
        /// Validity of the leaf, seconds since 1970. Default 2021-01-01 … 2039-01-01.
        public var leafValidity: ClosedRange<Int64>
        /// Whether the leaf carries Apple's leaf marker OID.
        public var leafHasAppleOID: Bool
        /// Whether the intermediate carries Apple's intermediate marker OID.
        public var intermediateHasAppleOID: Bool
        /// An OCSP responder URL put in the leaf's AIA extension (the responder answers for the intermediate's certificates).
        public var ocspResponderURL: String?
        /// The OCSP responder URL in the intermediate's AIA extension (answering for the root's); defaults to ``ocspResponderURL``.
        public var intermediateOCSPResponderURL: String?
        /// A distinguishing word in the subject names.
        public var name: String

        /// Defaults give a valid chain with both Apple OIDs and no OCSP responder.
        public init(
            caValidity: ClosedRange<Int64> = 1_577_836_800...2_208_988_800,
            leafValidity: ClosedRange<Int64> = 1_609_459_200...2_177_452_800, leafHasAppleOID: Bool = true,
            intermediateHasAppleOID: Bool = true, ocspResponderURL: String? = nil,
            intermediateOCSPResponderURL: String? = nil, name: String = "Test"
        ) {
            self.intermediateOCSPResponderURL = intermediateOCSPResponderURL ?? ocspResponderURL
            self.caValidity = caValidity
            self.leafValidity = leafValidity
            self.leafHasAppleOID = leafHasAppleOID
            self.intermediateHasAppleOID = intermediateHasAppleOID
            self.ocspResponderURL = ocspResponderURL
            self.name = name
        }
    }

    /// The root's key and self-signed certificate.
    public let rootKey: P256PrivateKey
    /// The root certificate (configure its DER as the trusted root).
    public let root: X509Certificate
    /// The intermediate's key (it signs the leaf).
    public let intermediateKey: P256PrivateKey
    /// The intermediate certificate, issued by the root.
    public let intermediate: X509Certificate
    /// The leaf's key (it signs payloads).
    public let leafKey: P256PrivateKey
    /// The leaf certificate, issued by the intermediate.
    public let leaf: X509Certificate

    /// Builds a fresh chain.
    public init(options: Options = Options()) throws(CryptoError) {
        rootKey = try P256PrivateKey()
        root = try X509Certificate.mint(
            CertificateTemplate(
                commonName: "\(options.name) Root CA", organization: "Entitled Tests", country: "US",
                notBefore: options.caValidity.lowerBound, notAfter: options.caValidity.upperBound,
                isCertificateAuthority: true),
            subjectKey: try rootKey.publicKey, issuer: nil, issuerKey: rootKey)
        intermediateKey = try P256PrivateKey()
        intermediate = try X509Certificate.mint(
            CertificateTemplate(
                commonName: "\(options.name) WWDR Intermediate", organization: "Entitled Tests", country: "US",
                notBefore: options.caValidity.lowerBound, notAfter: options.caValidity.upperBound,
                isCertificateAuthority: true,
                markerExtensionOIDs: options.intermediateHasAppleOID ? [SignedDataVerifier.intermediateMarkerOID] : [],
                ocspResponderURL: options.intermediateOCSPResponderURL),
            subjectKey: try intermediateKey.publicKey, issuer: root, issuerKey: rootKey)
        leafKey = try P256PrivateKey()
        leaf = try X509Certificate.mint(
            CertificateTemplate(
                commonName: "\(options.name) App Store Signing", organization: "Entitled Tests", country: "US",
                notBefore: options.leafValidity.lowerBound, notAfter: options.leafValidity.upperBound,
                isCertificateAuthority: false,
                markerExtensionOIDs: options.leafHasAppleOID ? [SignedDataVerifier.leafMarkerOID] : [],
                ocspResponderURL: options.ocspResponderURL),
            subjectKey: try leafKey.publicKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    /// The root's DER, to configure as a trusted root.
    public var rootDER: [UInt8] { root.derBytes }

    /// A signer with this CA's leaf key and `x5c` = [leaf, intermediate, root].
    public var signer: JWSSigner {
        JWSSigner(key: leafKey, certificateChain: [leaf.derBytes, intermediate.derBytes, root.derBytes])
    }
}

/// Signs payloads into compact JWS the way Apple does: header `{"alg":"ES256","x5c":[…]}`, ES256 raw r||s.
///
/// Every field can be overridden to craft invalid tokens.
public struct JWSSigner: Sendable {
    /// The signing key (the leaf's).
    public var key: P256PrivateKey
    /// DER certificates for `x5c`, leaf first; nil omits `x5c`.
    public var certificateChain: [[UInt8]]?
    /// The `alg` written in the header (the signature is always ES256).
    public var algorithm: String
    /// Extra header members, as raw JSON values keyed by name (e.g. `"kid": "\"Apple_Xcode_Key\""`).
    public var extraHeaderMembers: [(String, String)]

    /// A signer using `key`, writing `certificateChain` as `x5c`.
    public init(
        key: P256PrivateKey, certificateChain: [[UInt8]]?, algorithm: String = "ES256",
        extraHeaderMembers: [(String, String)] = []
    ) {
        self.key = key
        self.certificateChain = certificateChain
        self.algorithm = algorithm
        self.extraHeaderMembers = extraHeaderMembers
    }

    /// The header JSON this signer writes.
    public var headerJSON: String {
        var members = ["\"alg\":\"\(algorithm)\""]
        if let certificateChain {
            members.append("\"x5c\":[" + certificateChain.map { "\"\(Base64.encode($0))\"" }.joined(separator: ",") + "]")
        }
        for (name, value) in extraHeaderMembers { members.append("\"\(name)\":\(value)") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// Signs `payload` encoded with `JSONEncoder` (keys sorted, so output is deterministic).
    public func sign(_ payload: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try sign(payloadJSON: Array(try encoder.encode(payload)))
    }

    /// Signs raw payload bytes.
    public func sign(payloadJSON: [UInt8]) throws(CryptoError) -> String {
        let signingInput = Base64.urlEncode(Array(headerJSON.utf8)) + "." + Base64.urlEncode(payloadJSON)
        let signature = try key.es256Signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }
}

/// A clock tests move by hand.
public final class ManualClock: EpochClock {
    private let now: Mutex<Int64>

    /// Starts at `milliseconds` since 1970.
    public init(milliseconds: Int64) { now = Mutex(milliseconds) }

    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative amount).
    public func advance(milliseconds: Int64) { now.withLock { $0 += milliseconds } }

    /// Sets the clock.
    public func set(milliseconds: Int64) { now.withLock { $0 = milliseconds } }
}
