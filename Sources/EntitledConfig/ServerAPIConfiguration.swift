import EntitledCrypto
import Foundation

extension ConfigurationLoader {
    /// Parses `apps[].serverAPI`; reads and checks the private key now, so a bad key stops the start.
    func serverAPI(_ node: Node, baseDirectory: String?) throws(ConfigurationError) -> ServerAPISettings {
        var object = try node.object()
        let key = try inAppPurchaseKey(&object, baseDirectory: baseDirectory)
        var settings = ServerAPISettings(keyId: key.keyId, issuerId: key.issuerId, privateKeyPEM: key.privateKeyPEM)
        if let value = object.take("baseURL") {
            let raw = try value.string()
            guard let url = URL(string: raw), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil,
                url.query == nil
            else {
                throw ConfigurationError(path: value.path, message: "'\(raw)' is not an http(s) URL such as https://proxy.example:8443")
            }
            settings.baseURL = url
        }
        if let value = object.take("reconcileEveryMinutes") {
            let minutes = try value.int()
            let range = ServerAPISettings.reconcileEveryMinutesRange
            guard range.contains(minutes) else {
                throw ConfigurationError(path: value.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
            }
            settings.reconcileEveryMinutes = minutes
        }
        try object.finish()
        return settings
    }

    /// Parses `apps[].signingKey`: the same three keys as `serverAPI`, read and checked the same way.
    func signingKey(_ node: Node, baseDirectory: String?) throws(ConfigurationError) -> SigningKeySettings {
        var object = try node.object()
        let key = try inAppPurchaseKey(&object, baseDirectory: baseDirectory)
        try object.finish()
        return key
    }

    /// `keyId`, `issuerId` and `privateKeyFile` of an in-app purchase key, taken from `object`.
    private func inAppPurchaseKey(_ object: inout ObjectReader, baseDirectory: String?) throws(ConfigurationError) -> SigningKeySettings {
        let keyIdNode = try object.require("keyId")
        let keyId = try keyIdNode.string()
        guard (1...64).contains(keyId.utf8.count), keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw ConfigurationError(path: keyIdNode.path, message: "expected the key id of an in-app purchase key, e.g. ABC123DEFG")
        }
        let issuerNode = try object.require("issuerId")
        let issuerId = try issuerNode.string()
        guard UUID(uuidString: issuerId) != nil else {
            throw ConfigurationError(path: issuerNode.path, message: "expected the issuer id, a UUID")
        }
        let keyNode = try object.require("privateKeyFile")
        let pem = try privateKeyPEM(try keyNode.string(), path: keyNode.path, baseDirectory: baseDirectory)
        return SigningKeySettings(keyId: keyId, issuerId: issuerId, privateKeyPEM: pem)
    }

    /// The PEM of `raw`: a file path (relative to the configuration file's folder), or `env:NAME`
    /// whose variable holds the PEM itself. Checked to be a P-256 private key; its text never appears in errors.
    private func privateKeyPEM(_ raw: String, path: String, baseDirectory: String?) throws(ConfigurationError) -> String {
        let pem: String
        if raw.hasPrefix("env:") {
            pem = try resolveSecret(raw, path: path)
        } else {
            let resolved = raw.hasPrefix("/") || baseDirectory == nil ? raw : baseDirectory! + "/" + raw
            guard let data = FileManager.default.contents(atPath: resolved), data.count <= 16_384 else {
                throw ConfigurationError(path: path, message: "cannot read the private key file '\(raw)'")
            }
            pem = String(decoding: data, as: UTF8.self)
        }
        do {
            _ = try P256PrivateKey(pem: pem)
        } catch {
            throw ConfigurationError(path: path, message: "not a P-256 private key in PEM (the .p8 file from App Store Connect)")
        }
        return pem
    }
}
