import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation

/// The simulator's signing chain (root → intermediate → leaf, Apple's shape and marker OIDs), persisted in a
/// data folder so a server configured with its root keeps trusting it across restarts.
///
/// Files: `ca/leaf-key.pem` (PKCS#8 PEM), `ca/root.der`, `ca/intermediate.der`, `ca/leaf.der`.
public struct SimulatorCA: Sendable {
    /// DER certificates, leaf first (the `x5c` order).
    public let chain: [[UInt8]]
    /// The leaf's private key, which signs every payload.
    public let leafKey: P256PrivateKey

    /// The root certificate's DER: configure it as a trusted root.
    public var rootDER: [UInt8] { chain[2] }

    /// A signer writing `x5c` = [leaf, intermediate, root] and signing ES256, as Apple does.
    public var signer: JWSSigner { JWSSigner(key: leafKey, certificateChain: chain) }

    /// Wraps a freshly minted test CA.
    public init(authority: TestCertificateAuthority) {
        chain = [authority.leaf.derBytes, authority.intermediate.derBytes, authority.root.derBytes]
        leafKey = authority.leafKey
    }

    /// A fresh, unpersisted chain (for tests).
    public static func ephemeral() throws -> SimulatorCA {
        SimulatorCA(authority: try TestCertificateAuthority(options: .init(name: "Entitled Simulator")))
    }

    private init(chain: [[UInt8]], leafKey: P256PrivateKey) {
        self.chain = chain
        self.leafKey = leafKey
    }

    /// Loads the chain from `directory/ca`, or mints one and writes it there when absent.
    public static func loadOrCreate(in directory: URL) throws -> SimulatorCA {
        let folder = directory.appendingPathComponent("ca")
        let names = ["leaf.der", "intermediate.der", "root.der"]
        let keyURL = folder.appendingPathComponent("leaf-key.pem")
        let fm = FileManager.default
        if fm.fileExists(atPath: keyURL.path) {
            let key = try P256PrivateKey(pem: try String(contentsOf: keyURL, encoding: .utf8))
            let chain = try names.map { [UInt8](try Data(contentsOf: folder.appendingPathComponent($0))) }
            for der in chain { _ = try X509Certificate(der: der) }
            return SimulatorCA(chain: chain, leafKey: key)
        }
        let ca = try ephemeral()
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, der) in zip(names, ca.chain) { try Data(der).write(to: folder.appendingPathComponent(name)) }
        try Data(try ca.leafKey.pkcs8PEM().utf8).write(to: keyURL)
        try? fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyURL.path)
        let rootPEM = PEM.encode(ca.rootDER, label: "CERTIFICATE")
        try Data(rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        return ca
    }
}

/// A signed V2 notification ready to post.
public struct SignedNotification: Sendable, Hashable {
    /// The decoded payload (its nested signed fields are JWS strings).
    public var payload: ResponseBodyV2DecodedPayload
    /// The compact JWS of `payload`: the `signedPayload` of the HTTP body.
    public var signedPayload: String
    /// The customer it concerns.
    public var customerId: String?
    /// The HTTP body Apple posts: `{"signedPayload":"…"}`.
    public var body: [UInt8] { Array("{\"signedPayload\":\"\(signedPayload)\"}".utf8) }
}

/// Signs ``PendingNotification``s into V2 notifications with the simulator's chain.
public struct NotificationSigner: Sendable {
    /// Signs payloads (leaf key, `x5c` chain).
    public var signer: JWSSigner
    /// The app's bundle identifier.
    public var bundleId: String
    /// The app's Apple ID.
    public var appAppleId: Int64
    /// `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment
    /// `bundleVersion` written in `data`.
    public var bundleVersion: String

    /// Signs for the app `bundleId` / `appAppleId` (the latter only in Production payloads) in `environment`.
    public init(signer: JWSSigner, bundleId: String, appAppleId: Int64, environment: AppStoreEnvironment, bundleVersion: String = "1.0") {
        self.signer = signer
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.bundleVersion = bundleVersion
    }

    /// Signs `pending` at `signedDate` (every nested payload gets the same `signedDate`).
    public func sign(_ pending: PendingNotification, signedDate: Int64, uuid: String = UUID().uuidString.lowercased()) throws
        -> SignedNotification
    {
        var payload = ResponseBodyV2DecodedPayload(
            notificationType: pending.type, subtype: pending.subtype, notificationUUID: uuid, version: "2.0",
            signedDate: signedDate)
        if var summary = pending.summary {
            summary.environment = environment
            summary.bundleId = bundleId
            summary.appAppleId = environment == .production ? appAppleId : nil
            payload.summary = summary
        } else {
            var data = NotificationData(
                environment: environment, appAppleId: environment == .production ? appAppleId : nil, bundleId: bundleId,
                bundleVersion: bundleVersion, status: pending.status, consumptionRequestReason: pending.consumptionRequestReason)
            if var transaction = pending.transaction {
                transaction.signedDate = signedDate
                data.signedTransactionInfo = try signer.sign(transaction)
            }
            if var renewal = pending.renewalInfo {
                renewal.signedDate = signedDate
                data.signedRenewalInfo = try signer.sign(renewal)
            }
            payload.data = data
        }
        return SignedNotification(payload: payload, signedPayload: try signer.sign(payload), customerId: pending.customerId)
    }
}
