import AppStore
import EntitledConfig
import EntitledCrypto
import Foundation
import JSONCoding

/// `NotificationVerifying` on the real signed-data verifier: one `SignedDataVerifier` per
/// configured app (its roots, bundleId, appAppleId and environments), sharing one chain cache.
public final class AppStoreVerifier: NotificationVerifying {
    /// Why the verifier could not be built from configuration.
    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    private let verifiers: [String: SignedDataVerifier]
    private let receiptVerifiers: [String: ReceiptVerifier]

    /// - Parameters:
    ///   - apps: the configured apps.
    ///   - clock: the server's clock (cache expiry; validity in online mode).
    ///   - online: check certificate revocation with OCSP and validity at now (else at `signedDate`).
    ///   - codec: decodes the payloads (``FastPaths``).
    public init(
        apps: [App], clock: any EpochClock, online: Bool = false, codec: JSONCodec = JSONCodec()
    ) throws(SetupError) {
        let cache = VerifiedChainCache()
        var verifiers: [String: SignedDataVerifier] = [:]
        var receiptVerifiers: [String: ReceiptVerifier] = [:]
        for app in apps {
            var receiptRoots: [[UInt8]] = []
            for path in app.receiptRootCertificates {
                receiptRoots.append(try Self.loadCertificate(path))
            }
            do {
                receiptVerifiers[app.bundleId] = try ReceiptVerifier(
                    configuration: .init(
                        trustedRoots: receiptRoots.isEmpty ? AppleRootCertificates.defaultReceiptRoots : receiptRoots,
                        bundleId: app.bundleId, environments: Set(app.environments.map(AppStoreEnvironment.init(rawValue:)))))
            } catch {
                throw SetupError(description: "apps[\(app.bundleId)].receiptRootCertificates: \(error.message)")
            }
            var roots: [[UInt8]] = []
            for path in app.appleRootCertificates {
                roots.append(try Self.loadCertificate(path))
            }
            let configuration = SignedDataVerifier.Configuration(
                trustedRoots: roots.isEmpty ? AppleRootCertificates.defaultRoots : roots, bundleId: app.bundleId,
                appAppleId: app.appAppleId,
                environments: Set(app.environments.map(AppStoreEnvironment.init(rawValue:))),
                mode: online ? .online : .offline)
            do {
                verifiers[app.bundleId] = try SignedDataVerifier(
                    configuration: configuration, clock: clock, chainCache: cache, codec: codec)
            } catch {
                throw SetupError(description: "apps[\(app.bundleId)].appleRootCertificates: \(error.message)")
            }
        }
        self.verifiers = verifiers
        self.receiptVerifiers = receiptVerifiers
    }

    public func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification {
        let verifier = try verifier(for: app)
        let outer = try await verifier.verifyPayload(signedPayload, as: ResponseBodyV2DecodedPayload.self)
        var result = VerifiedNotification(payload: outer.value, unknownMembers: outer.unknownMembers, isBare: outer.isBare)
        // Each nested JWS is verified on its own: the outer signature does not vouch for them.
        if let signed = outer.value.data?.signedTransactionInfo {
            let transaction = try await verifier.verifyPayload(signed, as: JWSTransactionDecodedPayload.self)
            result.payload.data?.transactionInfo = transaction.value
            result.transactionUnknownMembers = transaction.unknownMembers
        }
        if let signed = outer.value.data?.signedRenewalInfo {
            let renewal = try await verifier.verifyPayload(signed, as: JWSRenewalInfoDecodedPayload.self)
            result.payload.data?.renewalInfo = renewal.value
            result.renewalUnknownMembers = renewal.unknownMembers
        }
        if let signed = outer.value.appData?.signedAppTransactionInfo {
            result.payload.appData?.appTransaction = try await verifier.verify(signed, as: AppTransaction.self)
        }
        return result
    }

    public func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> (payload: JWSTransactionDecodedPayload, unknownMembers: [UnknownMember])
    {
        let verified = try await verifier(for: app).verifyPayload(signedTransaction, as: JWSTransactionDecodedPayload.self)
        return (verified.value, verified.unknownMembers)
    }

    public func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError)
        -> AppTransaction
    {
        try await verifier(for: app).verify(signedAppTransaction, as: AppTransaction.self)
    }

    public func verifyRealtimeRequest(signedPayload: String, app: App) async throws(VerificationError) -> DecodedRealtimeRequestBody {
        try await verifier(for: app).verify(signedPayload, as: DecodedRealtimeRequestBody.self)
    }

    public func verifyReceipt(_ receipt: ReceiptVerifier.Decoded, app: App, now: Int64) throws(VerificationError) -> AppReceipt {
        guard let verifier = receiptVerifiers[app.bundleId] else {
            throw VerificationError(.invalidAppIdentifier, "bundleId \(app.bundleId) is not configured")
        }
        return try verifier.check(receipt, now: now)
    }

    /// Verifies a stored fact's signed text again as it was verified when it arrived: signature
    /// and chain to the app's configured roots, offline at its `signedDate` unless built `online`.
    /// A notification's nested JWS are verified with it. False for a kind without a signed form
    /// (V1 notifications, receipt entries: their identity is stored, not a signature).
    public func reverify(kind: String, signed: String, app: App) async throws(VerificationError) -> Bool {
        let verifier = try verifier(for: app)
        switch kind {
        case "notification": _ = try await verifyNotification(signedPayload: signed, app: app)
        case "transaction": _ = try await verifier.verify(signed, as: JWSTransactionDecodedPayload.self)
        case "renewal": _ = try await verifier.verify(signed, as: JWSRenewalInfoDecodedPayload.self)
        case "appTransaction": _ = try await verifier.verify(signed, as: AppTransaction.self)
        default: return false
        }
        return true
    }

    /// The app's verifier (for the App Store Server API client's answers).
    public func signedDataVerifier(bundleId: String) -> SignedDataVerifier? { verifiers[bundleId] }

    private func verifier(for app: App) throws(VerificationError) -> SignedDataVerifier {
        guard let verifier = verifiers[app.bundleId] else {
            throw VerificationError(.invalidAppIdentifier, "bundleId \(app.bundleId) is not configured")
        }
        return verifier
    }

    /// DER from a DER or PEM certificate file.
    static func loadCertificate(_ path: String) throws(SetupError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SetupError(description: "cannot read certificate file '\(path)'")
        }
        let bytes = Array(data)
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            do {
                return try X509Certificate(pem: text).derBytes
            } catch {
                throw SetupError(description: "certificate file '\(path)' is not valid PEM")
            }
        }
        do {
            return try X509Certificate(der: bytes).derBytes
        } catch {
            throw SetupError(description: "certificate file '\(path)' is not a DER or PEM certificate")
        }
    }
}
