import EntitledCrypto
import Foundation

extension ConfigurationLoader {
    /// Parses `apps[].serverAPI`; reads and checks the private key now, so a bad key stops the start.
    /// Nil when a required key's problem was recorded.
    func serverAPI(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> ServerAPISettings? {
        var object = try node.object()
        let key = inAppPurchaseKey(&object, baseDirectory: baseDirectory, resolves: resolvesServerAPIKeys, problems)
        var baseURL: URL?
        object.read("baseURL", problems) { value throws(ConfigurationError) in
            let raw = try value.string()
            guard let url = URL(string: raw), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil,
                url.query == nil
            else {
                throw ConfigurationError(path: value.path, message: "'\(raw)' is not an http(s) URL such as https://proxy.example:8443")
            }
            baseURL = url
        }
        var legacyHosts: Bool?
        object.read("legacyHosts", problems) { value throws(ConfigurationError) in legacyHosts = try value.bool() }
        var minutes: Int?
        object.read("reconcileEveryMinutes", problems) { value throws(ConfigurationError) in
            let value = (try value.int(), value.path)
            let range = ServerAPISettings.reconcileEveryMinutesRange
            guard range.contains(value.0) else {
                throw ConfigurationError(path: value.1, message: "must be between \(range.lowerBound) and \(range.upperBound)")
            }
            minutes = value.0
        }
        object.finish(problems)
        guard let key else { return nil }
        var settings = ServerAPISettings(keyId: key.keyId, issuerId: key.issuerId, privateKeyPEM: key.privateKeyPEM)
        if let legacyHosts { settings.legacyHosts = legacyHosts }
        if let baseURL { settings.baseURL = baseURL }
        if let minutes { settings.reconcileEveryMinutes = minutes }
        return settings
    }

    /// Parses `apps[].signingKey`: the same three keys as `serverAPI`, read and checked the same way.
    /// Nil when a problem was recorded.
    func signingKey(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> SigningKeySettings? {
        var object = try node.object()
        let key = inAppPurchaseKey(&object, baseDirectory: baseDirectory, resolves: nil, problems)
        object.finish(problems)
        return key
    }

    /// `keyId`, `issuerId` and `privateKeyFile` of an in-app purchase key, taken from `object`; every
    /// problem is recorded, nil when there was one. `resolves` overrides ``resolvesSecrets`` for an
    /// `env:` key.
    private func inAppPurchaseKey(
        _ object: inout ObjectReader, baseDirectory: String?, resolves: Bool?, _ problems: Problems
    ) -> SigningKeySettings? {
        let keyId = problems.check { () throws(ConfigurationError) -> String in
            let keyIdNode = try object.require("keyId")
            let keyId = try keyIdNode.string()
            guard (1...64).contains(keyId.utf8.count), keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw ConfigurationError(path: keyIdNode.path, message: "expected the key id of an in-app purchase key, e.g. ABC123DEFG")
            }
            return keyId
        }
        let issuerId = problems.check { () throws(ConfigurationError) -> String in
            let issuerNode = try object.require("issuerId")
            let issuerId = try issuerNode.string()
            guard UUID(uuidString: issuerId) != nil else {
                throw ConfigurationError(path: issuerNode.path, message: "expected the issuer id, a UUID")
            }
            return issuerId
        }
        let pem = problems.check { () throws(ConfigurationError) -> String in
            let keyNode = try object.require("privateKeyFile")
            return try privateKeyPEM(try keyNode.string(), path: keyNode.path, baseDirectory: baseDirectory, resolves: resolves)
        }
        guard let keyId, let issuerId, let pem else { return nil }
        return SigningKeySettings(keyId: keyId, issuerId: issuerId, privateKeyPEM: pem)
    }

    /// The PEM of `raw`: a file path (relative to the configuration file's folder), or `env:NAME`
    /// whose variable holds the PEM itself. Checked to be a P-256 private key; its text never appears in errors.
    private func privateKeyPEM(_ raw: String, path: String, baseDirectory: String?, resolves: Bool?) throws(ConfigurationError) -> String {
        let pem: String
        if raw.hasPrefix("env:") {
            pem = try resolveSecret(raw, path: path, use: "the App Store Server API private key (PEM)", resolves: resolves)
        } else {
            let resolved = Self.absolutePath(raw, relativeTo: baseDirectory)
            guard let data = FileManager.default.contents(atPath: resolved), data.count <= 16_384 else {
                throw ConfigurationError(path: path, message: "cannot read the private key file '\(raw)' \(Self.tried(resolved))")
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
