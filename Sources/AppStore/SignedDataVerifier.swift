import EntitledCrypto
import Foundation
import JSONCoding
import Synchronization

/// Which of the configured app's identifiers a payload type carries, and so must match.
public struct AppIdentifierChecks: OptionSet, Sendable, Hashable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The payload must carry the configured bundleId (a missing one is a mismatch).
    public static let bundleId = AppIdentifierChecks(rawValue: 1)
    /// The payload must carry the configured appAppleId when Production is expected.
    public static let appAppleId = AppIdentifierChecks(rawValue: 2)
}

/// Payload types that declare which identifiers they carry.
///
/// Apple's libraries check bundleId on notifications, transactions and app transactions, appAppleId
/// on notifications and app transactions (Production), and neither on renewal info. A type that
/// does not conform is checked on whatever it reports (a nil identifier is not compared).
public protocol DeclaresAppIdentifierChecks {
    /// The identifiers this payload type must match.
    static var appIdentifierChecks: AppIdentifierChecks { get }
}

/// A payload that passed verification, with what the verifier saw.
public struct VerifiedPayload<Payload: VerifiablePayload>: Sendable {
    /// The decoded payload.
    public var value: Payload
    /// The payload JSON exactly as signed.
    public var payloadJSON: [UInt8]
    /// False for Xcode and LocalTesting payloads, which are decoded without signature or chain checks.
    public var signatureChecked: Bool
    /// Whether the text was the token alone, without whitespace around it (``CompactJWS/isBare``):
    /// nothing in it needs JSON escaping.
    public var isBare: Bool = false
    /// The members of the payload JSON its model does not read, for types that report them
    /// (``ReportsUnknownMembers``), found by the same decode; empty for other types.
    public var unknownMembers: [UnknownMember] = []
}

/// Verifies Apple's signed data (compact JWS with an `x5c` chain) and decodes it.
///
/// The steps, in order: parse (size, shape, nesting) → decode the payload → for Xcode/LocalTesting
/// payloads that the configuration accepts, stop here → `alg` must be ES256 → `x5c` must hold three
/// certificates → the leaf and intermediate must carry Apple's marker OIDs and chain to a configured
/// root at the validation time (or be in the verified-chain cache with a window covering that time)
/// → online mode: OCSP for leaf and intermediate → the ES256 signature over `header.payload` →
/// bundleId, appAppleId, environment.
///
/// Nested signed fields (`signedTransactionInfo`, `signedRenewalInfo`, `signedAppTransactionInfo`)
/// are separate JWS: verify each with another call.
///
/// Thread-safe; share one instance per app configuration.
public final class SignedDataVerifier: Sendable {
    /// When certificates must be valid, and whether revocation is checked.
    public struct Mode: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Hashable { case offline, clockTime, online }
        let kind: Kind

        /// Validity at the payload's `signedDate` (the clock's now when it has none); no OCSP.
        /// Apple's libraries do this when online checks are off.
        public static let offline = Mode(kind: .offline)
        /// Validity at the clock's now; no OCSP (`entitled verify --at`).
        public static let clockTime = Mode(kind: .clockTime)
        /// Validity at the clock's now, and OCSP for the leaf and the intermediate.
        public static let online = Mode(kind: .online)

        public var description: String {
            switch kind {
            case .offline: "offline"
            case .clockTime: "clockTime"
            case .online: "online"
            }
        }
    }

    /// What the verifier trusts and expects.
    public struct Configuration: Sendable {
        /// DER root certificates a chain must end at. Default: Apple Root CA - G3.
        public var trustedRoots: [[UInt8]]
        /// The app's bundle identifier; nil skips the check.
        public var bundleId: String?
        /// The app's Apple ID; compared when Production is expected. Nil skips the check.
        public var appAppleId: Int64?
        /// The environments accepted. Xcode and LocalTesting payloads are decoded without signature
        /// checks only when listed here.
        public var environments: Set<AppStoreEnvironment>
        /// Validity time and revocation checking.
        public var mode: Mode
        /// Size and nesting limits.
        public var limits: JWSLimits

        /// A configuration accepting any of `environments`.
        public init(
            trustedRoots: [[UInt8]] = AppleRootCertificates.defaultRoots, bundleId: String?, appAppleId: Int64? = nil,
            environments: Set<AppStoreEnvironment>, mode: Mode = .offline, limits: JWSLimits = JWSLimits()
        ) {
            self.trustedRoots = trustedRoots
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environments = environments
            self.mode = mode
            self.limits = limits
        }

        /// One environment, as Apple's verifier is configured.
        public init(
            trustedRoots: [[UInt8]] = AppleRootCertificates.defaultRoots, bundleId: String?, appAppleId: Int64? = nil,
            environment: AppStoreEnvironment, mode: Mode = .offline, limits: JWSLimits = JWSLimits()
        ) {
            self.init(
                trustedRoots: trustedRoots, bundleId: bundleId, appAppleId: appAppleId, environments: [environment],
                mode: mode, limits: limits)
        }
    }

    /// Apple's marker extension on the signing leaf.
    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    /// Apple's marker extension on the WWDR intermediate.
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    /// The configuration this verifier was built with.
    public let configuration: Configuration
    /// The verified-chain cache (shareable between verifiers).
    public let chainCache: VerifiedChainCache

    private let clock: any EpochClock
    private let revocationChecker: (any RevocationChecker)?
    private let roots: [X509Certificate]
    private let rootFingerprints: [[UInt8]]
    private let trustStore: X509TrustStore
    private let validations = Atomic<Int>(0)
    private let headerMemo = HeaderMemo()

    /// - Parameters:
    ///   - configuration: roots, app identity, environments, mode.
    ///   - clock: the source of now (cache expiry; validity in `.clockTime`/`.online`, or offline without `signedDate`).
    ///   - revocationChecker: used in `.online` mode; defaults to OCSP over ``HTTPOCSPTransport``.
    ///   - chainCache: where verified chains are remembered.
    ///   - codec: decodes the payloads (``JSONCodec``).
    /// - Throws: `INVALID_CERTIFICATE` when a configured root is not a certificate.
    public init(
        configuration: Configuration, clock: any EpochClock, revocationChecker: (any RevocationChecker)? = nil,
        chainCache: VerifiedChainCache = VerifiedChainCache(), codec: JSONCodec = JSONCodec()
    ) throws(VerificationError) {
        self.configuration = configuration
        self.codec = codec
        self.clock = clock
        self.chainCache = chainCache
        if configuration.mode == .online {
            self.revocationChecker = revocationChecker ?? OCSPRevocationChecker()
        } else {
            self.revocationChecker = nil
        }
        var roots: [X509Certificate] = []
        for der in configuration.trustedRoots {
            do {
                roots.append(try X509Certificate(der: der))
            } catch {
                throw VerificationError(.invalidCertificate, "a configured root is not a certificate: \(error.message)")
            }
        }
        self.roots = roots
        rootFingerprints = roots.map { SHA256.hash($0.derBytes) }
        do {
            trustStore = try X509TrustStore(roots: roots)
        } catch {
            throw VerificationError(.invalidCertificate, "cannot build the trust store: \(error.message)")
        }
    }

    /// How many full X.509 chain validations ran (cache misses). For tests and metrics.
    public var x509ValidationCount: Int { validations.load(ordering: .relaxed) }

    /// Verifies `jws` and decodes its payload as `P`.
    /// - Throws: ``VerificationError`` with the first check that failed.
    public func verify<P: VerifiablePayload>(_ jws: String, as type: P.Type = P.self) async throws(VerificationError) -> P {
        try await verifyPayload(jws, as: type).value
    }

    /// Verifies `jws` and returns the decoded payload with the signed JSON bytes.
    public func verifyPayload<P: VerifiablePayload>(_ jws: String, as type: P.Type = P.self) async throws(VerificationError)
        -> VerifiedPayload<P>
    {
        let checked = try checkWithoutRevocation(jws, as: type)
        if let chain = checked.chain, let revocationChecker {
            // Leaf against intermediate, intermediate against root, as Apple's libraries do.
            let now = clock.nowMilliseconds()
            try await revocationChecker.check(chain[0], issuer: chain[1], trustedRoots: roots, at: now)
            try await revocationChecker.check(chain[1], issuer: chain[2], trustedRoots: roots, at: now)
        }
        return checked.result
    }

    /// Verifies `jws` without suspending, for configurations that do not check revocation
    /// (`.offline`, `.clockTime`): for callers on threads outside Swift concurrency.
    ///
    /// - Precondition: the mode is not `.online`; OCSP needs the network, so use ``verify(_:as:)``.
    /// - Throws: ``VerificationError`` with the first check that failed.
    public func verifySynchronously<P: VerifiablePayload>(_ jws: String, as type: P.Type = P.self) throws(VerificationError)
        -> VerifiedPayload<P>
    {
        precondition(revocationChecker == nil, "online verification checks OCSP; use the async verify(_:as:)")
        return try checkWithoutRevocation(jws, as: type).result
    }

    /// Everything but OCSP, synchronously: parse, chain (or cache), signature, app checks.
    func checkWithoutRevocation<P: VerifiablePayload>(_ token: String, as type: P.Type) throws(VerificationError)
        -> (result: VerifiedPayload<P>, chain: [X509Certificate]?)
    {
        let jws = try CompactJWS.parse(token, limits: configuration.limits, memo: headerMemo)
        let result = decode(P.self, jws.payload)
        let unknownMembers = (try? result.get())?.unknown ?? []
        // A closure, not `\.value`: a key path in this generic function is instantiated anew on
        // every call, which cost more than the rest of this line (seen in `perf`).
        let decoded = result.map { $0.value }

        if case .success(let payload) = decoded, let environment = payload.verificationEnvironment, environment.isLocal,
            configuration.environments.contains(environment)
        {
            // Xcode and LocalTesting are signed by a local key that chains to nothing; accept them
            // unsigned, but only when the operator listed the environment.
            try checkApp(payload)
            return (
                VerifiedPayload(
                    value: payload, payloadJSON: jws.payload, signatureChecked: false, isBare: jws.isBare, unknownMembers: unknownMembers),
                nil
            )
        }

        guard let algorithm = jws.algorithm else { throw VerificationError(.invalidAlgorithm, "header has no alg") }
        guard algorithm == "ES256" else { throw VerificationError(.invalidAlgorithm, "alg \(algorithm.prefix(20)) is not ES256") }
        guard let x5c = jws.decodedHeader.certificateDER else {
            throw VerificationError(.invalidJWTFormat, "header has no x5c array of strings")
        }
        guard x5c.count == 3 else {
            throw VerificationError(.invalidChainLength, "x5c holds \(x5c.count) certificates, expected 3")
        }
        guard let leafDER = x5c[0], let intermediateDER = x5c[1], let chainDigest = jws.decodedHeader.chainDigest else {
            throw VerificationError(.invalidCertificate, "x5c entry is not base64")
        }
        guard jws.signature.count == 64 else {
            throw VerificationError(.invalidSignature, "ES256 signature is \(jws.signature.count) bytes, expected 64")
        }

        let now = clock.nowMilliseconds()
        let payload: P
        switch decoded {
        case .success(let value):
            payload = value
        case .failure(let error):
            // Report a forged or damaged token as such rather than as a payload problem: the payload
            // counts as malformed only if a trusted chain really signed it. Without a readable
            // signedDate the chain is checked at the clock's time, as Apple does.
            let entry = try verifiedChain(
                leafDER: leafDER, intermediateDER: intermediateDER, digest: chainDigest,
                at: Self.floorDivide(now, 1000), now: now)
            guard entry.leafKey.isValidES256Signature(raw: jws.signature, for: jws.signingInput) else {
                throw VerificationError(.invalidSignature, "signature does not verify")
            }
            throw error
        }

        let validationMilliseconds =
            configuration.mode == .offline ? (payload.verificationSignedDate ?? now) : now
        let validationTime = Self.floorDivide(validationMilliseconds, 1000)
        let entry = try verifiedChain(
            leafDER: leafDER, intermediateDER: intermediateDER, digest: chainDigest, at: validationTime, now: now)

        guard entry.leafKey.isValidES256Signature(raw: jws.signature, for: jws.signingInput) else {
            throw VerificationError(.invalidSignature, "signature does not verify")
        }
        try checkApp(payload)
        return (
            VerifiedPayload(value: payload, payloadJSON: jws.payload, signatureChecked: true, isBare: jws.isBare, unknownMembers: unknownMembers),
            entry.chain
        )
    }

    /// Verifies an `x5c`-style chain (DER, leaf first, exactly three; the third is ignored in favour
    /// of the configured roots) at `time`, as token verification does, without OCSP.
    ///
    /// - Parameter time: seconds since 1970.
    /// - Returns: the leaf's public key.
    /// - Throws: `INVALID_CHAIN_LENGTH`, `INVALID_CERTIFICATE`, `MISSING_APPLE_OID`, `CHAIN_UNTRUSTED`, `CERTIFICATE_EXPIRED`.
    public func verifyCertificateChain(_ certificates: [[UInt8]], at time: Int64) throws(VerificationError) -> P256PublicKey {
        guard certificates.count == 3 else {
            throw VerificationError(.invalidChainLength, "\(certificates.count) certificates, expected 3")
        }
        let now = clock.nowMilliseconds()
        let digest = SHA256.hash(concatenating: [certificates[0], certificates[1]])
        return try verifiedChain(
            leafDER: certificates[0], intermediateDER: certificates[1], digest: digest, at: time, now: now
        ).leafKey
    }

    private let codec: JSONCodec

    /// The payload, with its unknown members when `P` reports them (from the same decode).
    private func decode<P: Decodable>(_ type: P.Type, _ bytes: [UInt8]) -> Result<(value: P, unknown: [UnknownMember]), VerificationError> {
        do {
            if let known = (P.self as? any ReportsUnknownMembers.Type)?.knownMembers {
                return .success(try codec.decodeReportingUnknown(P.self, from: bytes, known: known))
            }
            return .success((try codec.decode(P.self, from: bytes), []))
        } catch let error as DecodingError {
            return .failure(VerificationError(.malformedPayload, Self.describe(error)))
        } catch {
            return .failure(VerificationError(.malformedPayload, "payload is not valid JSON"))
        }
    }

    /// A short account of a decoding error (the coding path), without echoing payload content.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context): return "wrong type at \(path(context))"
        case .valueNotFound(_, let context): return "missing value at \(path(context))"
        case .keyNotFound(let key, let context):
            return "missing key \(key.stringValue)" + (context.codingPath.isEmpty ? "" : " in \(path(context))")
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "payload is not valid JSON" : "invalid value at \(path(context))"
        @unknown default: return "payload does not decode"
        }
    }

    /// The chain for leaf + intermediate, valid at `time` (seconds): from the cache, or verified now.
    private func verifiedChain(leafDER: [UInt8], intermediateDER: [UInt8], digest: [UInt8], at time: Int64, now: Int64)
        throws(VerificationError) -> VerifiedChainCache.Entry
    {
        if let entry = chainCache.lookup(chainDigest: digest, rootFingerprints: rootFingerprints, now: now) {
            guard entry.validFrom <= time, time <= entry.validUntil else {
                throw VerificationError(
                    .certificateExpired, "certificate chain is not valid at \(time) (valid \(entry.validFrom)…\(entry.validUntil))")
            }
            return entry
        }

        validations.add(1, ordering: .relaxed)
        let leaf: X509Certificate
        let intermediate: X509Certificate
        do {
            leaf = try X509Certificate(der: leafDER)
        } catch {
            throw VerificationError(.invalidCertificate, "leaf: \(error.message)")
        }
        do {
            intermediate = try X509Certificate(der: intermediateDER)
        } catch {
            throw VerificationError(.invalidCertificate, "intermediate: \(error.message)")
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            throw VerificationError(.missingAppleOID, "leaf lacks \(Self.leafMarkerOID)")
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            throw VerificationError(.missingAppleOID, "intermediate lacks \(Self.intermediateMarkerOID)")
        }
        let leafKey: P256PublicKey
        do {
            leafKey = try leaf.p256PublicKey()
        } catch {
            throw VerificationError(.invalidCertificate, "leaf key: \(error.message)")
        }
        let chain: [X509Certificate]
        switch trustStore.verify(leaf: leaf, intermediates: [intermediate], at: time) {
        case .success(let built): chain = built
        case .failure(.expired(let message)): throw VerificationError(.certificateExpired, message)
        case .failure(.untrusted(let message)): throw VerificationError(.chainUntrusted, message)
        }
        // OpenSSL may find a shorter path (a leaf issued straight by a root); Apple's chain is exactly
        // leaf → the x5c intermediate → root, and the intermediate is the one whose OID was checked.
        guard chain.count == 3, chain[1] == intermediate else {
            throw VerificationError(.chainUntrusted, "chain does not run leaf → intermediate → root")
        }
        let entry = VerifiedChainCache.Entry(
            leafKey: leafKey, chain: chain, validFrom: chain.map(\.notBefore).max()!,
            validUntil: chain.map(\.notAfter).min()!, storedAt: now)
        chainCache.store(entry, for: .init(chainDigest: digest, rootFingerprint: SHA256.hash(chain[2].derBytes)), now: now)
        return entry
    }

    /// bundleId, then appAppleId (when Production is expected), then environment — Apple's order.
    private func checkApp<P: VerifiablePayload>(_ payload: P) throws(VerificationError) {
        let declared = (P.self as? any DeclaresAppIdentifierChecks.Type)?.appIdentifierChecks
        if let bundleId = configuration.bundleId {
            let required = declared?.contains(.bundleId) ?? (payload.verificationBundleId != nil)
            if required, payload.verificationBundleId != bundleId {
                throw VerificationError(
                    .invalidAppIdentifier, "bundleId \(payload.verificationBundleId ?? "(none)") is not \(bundleId)")
            }
        }
        let environment = payload.verificationEnvironment
        if let appAppleId = configuration.appAppleId,
            configuration.environments == [.production] || environment == .production
        {
            let required = declared?.contains(.appAppleId) ?? (payload.verificationAppAppleId != nil)
            if required, payload.verificationAppAppleId != appAppleId {
                throw VerificationError(
                    .invalidAppIdentifier,
                    "appAppleId \(payload.verificationAppAppleId.map(String.init) ?? "(none)") is not \(appAppleId)")
            }
        }
        guard let environment, configuration.environments.contains(environment) else {
            let accepted = configuration.environments.map(\.rawValue).sorted().joined(separator: ", ")
            throw VerificationError(
                .invalidEnvironment, "environment \(environment?.rawValue ?? "(none)") is not one of: \(accepted)")
        }
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }
}
