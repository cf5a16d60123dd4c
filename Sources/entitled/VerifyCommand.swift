import AppStore
import Foundation

/// `entitled verify`: verifies signed App Store payloads, one per line, and prints them decoded.
///
/// Works on generic JSON (the output is the payload as signed, with nested signed fields replaced by
/// their verified payloads), so it does not depend on the typed models.
enum VerifyCommand: Command {
    static let name = "verify"
    static let summary = "verify signed App Store payloads (JWS) and print them decoded"
    static let help = """
        Usage: entitled verify [--root CERT]... [--bundle-id ID] [--app-apple-id N]
                               [--environment Production|Sandbox|Xcode|LocalTesting] [--at EPOCH_SECONDS]
                               [--kind auto|notification|transaction|renewal|app-transaction] [FILE|-]

        Reads one payload per line (a compact JWS, or a JSON body {"signedPayload": "…"}) from FILE or
        standard input and writes one line of JSON per input line: the verified payload, with
        signedTransactionInfo, signedRenewalInfo and signedAppTransactionInfo replaced by their own
        verified payloads, or {"error": "<CODE>", "message": "…"}. Blank lines are skipped.

        Options:
          --root CERT         a trusted root certificate (DER or PEM file); repeatable.
                              Default: the bundled Apple Root CA - G3.
          --bundle-id ID      require this bundle identifier (default: not checked)
          --app-apple-id N    require this app Apple ID for Production payloads
          --environment ENV   accept only this environment (default: Production and Sandbox;
                              Xcode and LocalTesting only when named, and then unsigned)
          --at SECONDS        check certificates at this time (default: each payload's signedDate)
          --kind KIND         payload kind (default: auto, from the payload's keys: notificationType,
                              transactionId, autoRenewStatus/renewalDate, receiptType/appTransactionId;
                              otherwise bundleId means a transaction and its absence renewal info)

        Exit status: 0 if every line verified, 2 if any failed (or bad usage), 1 on a runtime failure.
        """

    enum Kind: String, CaseIterable {
        case auto, notification, transaction, renewal
        case appTransaction = "app-transaction"
    }

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let rootPaths = try arguments.options("--root")
        let bundleId = try arguments.option("--bundle-id")
        let appAppleId = try arguments.option("--app-apple-id", as: "an integer") { Int64($0) }
        let environment = try arguments.option("--environment", as: "Production, Sandbox, Xcode or LocalTesting") {
            raw in AppStoreEnvironment.known.first { $0.rawValue == raw }
        }
        let at = try arguments.option("--at", as: "epoch seconds") { Int64($0) }
        let kind = try arguments.option("--kind", as: "auto, notification, transaction, renewal or app-transaction") {
            Kind(rawValue: $0)
        } ?? .auto
        let positionals = try arguments.positionals()
        try arguments.finish()
        guard positionals.count <= 1 else { throw UsageError("at most one input file") }

        var roots: [[UInt8]] = []
        for path in rootPaths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read root certificate '\(path)'")
            }
            roots.append(try certificateDER(data, path: path))
        }
        let configuration = SignedDataVerifier.Configuration(
            trustedRoots: roots.isEmpty ? AppleRootCertificates.defaultRoots : roots, bundleId: bundleId,
            appAppleId: appAppleId, environments: environment.map { [$0] } ?? [.production, .sandbox],
            mode: at == nil ? .offline : .clockTime)
        // The composition edge: the only place the CLI chooses a clock.
        let clock: any EpochClock = at.map { FixedClock(seconds: $0) } ?? SystemClock()
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(configuration: configuration, clock: clock)
        } catch {
            throw UsageError("--root: \(error.message)")
        }

        let input: Data
        let path = positionals.first ?? "-"
        if path == "-" {
            input = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let data = FileManager.default.contents(atPath: path) else { throw RuntimeError("cannot read '\(path)'") }
            input = data
        }

        var failed = false
        let output = FileHandle.standardOutput
        for line in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { continue }
            let result: [String: Any]
            do {
                result = try await verifyLine(text, kind: kind, verifier: verifier)
            } catch {
                failed = true
                result = ["error": error.code.rawValue, "message": error.message]
            }
            output.write(serialize(result) + Data("\n".utf8))
        }
        return failed ? 2 : 0
    }

    /// DER from a DER or PEM certificate file.
    static func certificateDER(_ data: Data, path: String) throws -> [UInt8] {
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") else { return Array(data) }
        let body = text.components(separatedBy: "-----BEGIN CERTIFICATE-----")[1]
            .components(separatedBy: "-----END CERTIFICATE-----")[0]
        guard let der = Data(base64Encoded: body.filter { !$0.isWhitespace }) else {
            throw UsageError("root certificate '\(path)' is not valid PEM")
        }
        return Array(der)
    }

    static func serialize(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data(#"{"error":"MALFORMED_PAYLOAD","message":"output is not serializable"}"#.utf8)
    }

    /// Verifies one input line and returns the JSON object to print.
    static func verifyLine(_ text: String, kind: Kind, verifier: SignedDataVerifier) async throws(VerificationError)
        -> [String: Any]
    {
        var token = text
        if text.hasPrefix("{") {
            guard let body = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                let signed = body["signedPayload"] as? String
            else { throw VerificationError(.invalidJWTFormat, "a JSON line must be an object with a signedPayload string") }
            token = signed
        }
        let resolved = kind == .auto ? try detectKind(token, limits: verifier.configuration.limits) : kind
        var object = try await verify(token, kind: resolved, verifier: verifier)
        if resolved == .notification {
            // Nested signed fields are separate JWS, each verified on its own.
            for (container, field, nestedKind) in [
                ("data", "signedTransactionInfo", Kind.transaction), ("data", "signedRenewalInfo", .renewal),
                ("appData", "signedAppTransactionInfo", .appTransaction),
            ] {
                guard var holder = object[container] as? [String: Any], let nested = holder[field] as? String else { continue }
                holder[field] = try await verify(nested, kind: nestedKind, verifier: verifier)
                object[container] = holder
            }
        }
        return object
    }

    /// Guesses the kind from the (not yet verified) payload's keys.
    static func detectKind(_ token: String, limits: JWSLimits) throws(VerificationError) -> Kind {
        let jws = try CompactJWS.parse(token, limits: limits)
        guard let object = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any] else {
            throw VerificationError(.malformedPayload, "payload is not a JSON object")
        }
        if object["notificationType"] != nil { return .notification }
        if object["transactionId"] != nil { return .transaction }
        if object["autoRenewStatus"] != nil || object["autoRenewProductId"] != nil || object["renewalDate"] != nil {
            return .renewal
        }
        if object["receiptType"] != nil || object["appTransactionId"] != nil { return .appTransaction }
        // Minimal payloads (Apple's own test data has some): a bundleId means a transaction, since
        // renewal info is the one kind without it.
        if object["bundleId"] != nil { return .transaction }
        if object["originalTransactionId"] != nil || object["environment"] != nil { return .renewal }
        throw VerificationError(.malformedPayload, "cannot tell the payload kind from its keys; use --kind")
    }

    static func verify(_ token: String, kind: Kind, verifier: SignedDataVerifier) async throws(VerificationError)
        -> [String: Any]
    {
        let json: [UInt8]
        switch kind {
        case .notification, .auto: json = try await verifier.verifyPayload(token, as: NotificationFields.self).payloadJSON
        case .transaction: json = try await verifier.verifyPayload(token, as: TransactionFields.self).payloadJSON
        case .renewal: json = try await verifier.verifyPayload(token, as: RenewalFields.self).payloadJSON
        case .appTransaction: json = try await verifier.verifyPayload(token, as: AppTransactionFields.self).payloadJSON
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw VerificationError(.malformedPayload, "payload is not a JSON object")
        }
        return object
    }
}

// The few fields the verifier reads, per kind. Everything else passes through as JSON.

/// Epoch milliseconds; Xcode writes fractional ones, which are truncated.
private struct Milliseconds: Decodable {
    var value: Int64
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let whole = try? container.decode(Int64.self) {
            value = whole
        } else {
            value = Int64(try container.decode(Double.self).rounded(.down))
        }
    }
}

private struct AppFields: Decodable {
    var environment: AppStoreEnvironment?
    var bundleId: String?
    var appAppleId: Int64?
    var externalPurchaseId: String?
}

private struct NotificationFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Milliseconds?
    var data: AppFields?
    var summary: AppFields?
    var externalPurchaseToken: AppFields?
    var appData: AppFields?

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    private var app: AppFields? { data ?? summary ?? externalPurchaseToken ?? appData }
    var verificationSignedDate: Int64? { signedDate?.value }
    var verificationEnvironment: AppStoreEnvironment? {
        if let token = externalPurchaseToken, data == nil, summary == nil {
            // External purchase tokens carry no environment; Apple infers it from the id's prefix.
            return token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
        }
        return app?.environment
    }
    var verificationBundleId: String? { app?.bundleId }
    var verificationAppAppleId: Int64? { app?.appAppleId }
}

private struct TransactionFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Milliseconds?
    var environment: AppStoreEnvironment?
    var bundleId: String?
    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId] }
    var verificationSignedDate: Int64? { signedDate?.value }
    var verificationEnvironment: AppStoreEnvironment? { environment }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { nil }
}

private struct RenewalFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Milliseconds?
    var environment: AppStoreEnvironment?
    static var appIdentifierChecks: AppIdentifierChecks { [] }
    var verificationSignedDate: Int64? { signedDate?.value }
    var verificationEnvironment: AppStoreEnvironment? { environment }
    var verificationBundleId: String? { nil }
    var verificationAppAppleId: Int64? { nil }
}

private struct AppTransactionFields: VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Milliseconds?
    var receiptCreationDate: Milliseconds?
    var receiptType: AppStoreEnvironment?
    var bundleId: String?
    var appAppleId: Int64?
    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    // Apple falls back to receiptCreationDate when an app transaction has no signedDate.
    var verificationSignedDate: Int64? { signedDate?.value ?? receiptCreationDate?.value }
    var verificationEnvironment: AppStoreEnvironment? { receiptType }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { appAppleId }
}
