import AppStore
import Foundation

/// `entitled verify`: verifies signed App Store payloads, one per line, and prints them decoded.
///
/// Only the command line lives here; the verification and rendering are ``SignedPayloadLines``.
enum VerifyCommand: Command {
    static let name = "verify"
    static let summary = "verify signed App Store payloads (JWS) and print them decoded"
    static let help = """
        Usage: entitled verify [--root CERT]... [--bundle-id ID] [--app-apple-id N]
                               [--environment Production|Sandbox|Xcode|LocalTesting] [--at EPOCH_SECONDS]
                               [--kind auto|notification|transaction|renewal|app-transaction] [FILE|-]

        Reads one payload per line (a compact JWS, or a JSON body {"signedPayload": "…"}) from FILE or
        standard input and writes one line of JSON per input line, in input order: the verified payload,
        with signedTransactionInfo, signedRenewalInfo and signedAppTransactionInfo replaced by their own
        verified payloads and date fields in whole milliseconds, or {"error": "<CODE>", "message": "…"}.
        Blank lines are skipped. FILE and CERT may be pipes (e.g. <(…)). Many lines are verified on
        every core.

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

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let rootPaths = try arguments.options("--root")
        let bundleId = try arguments.option("--bundle-id")
        let appAppleId = try arguments.option("--app-apple-id", as: "an integer") { Int64($0) }
        let environment = try arguments.option("--environment", as: "Production, Sandbox, Xcode or LocalTesting") {
            raw in AppStoreEnvironment.known.first { $0.rawValue == raw }
        }
        let at = try arguments.option("--at", as: "epoch seconds") { Int64($0) }
        let kind = try arguments.option("--kind", as: "auto, notification, transaction, renewal or app-transaction") {
            SignedPayloadLines.Kind(rawValue: $0)
        } ?? .auto
        let positionals = try arguments.positionals()
        try arguments.finish()
        guard positionals.count <= 1 else { throw UsageError("at most one input file") }

        var roots: [[UInt8]] = []
        for path in rootPaths {
            guard let data = readAll(path) else { throw UsageError("cannot read root certificate '\(path)'") }
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

        let path = positionals.first ?? "-"
        guard let input = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : readAll(path) else {
            throw RuntimeError("cannot read '\(path)'")
        }
        let output = FileHandle.standardOutput
        let verified = SignedPayloadLines(verifier: verifier, kind: kind).verifyLines(
            Array(input), workers: ProcessInfo.processInfo.activeProcessorCount
        ) { output.write(Data($0)) }
        return verified ? ExitStatus.ok : 2  // some line failed, as documented
    }

    /// Everything readable at `path`, read to its end: regular files, pipes and process substitutions
    /// (`FileManager.contents(atPath:)` reads only regular files).
    static func readAll(_ path: String) -> Data? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return try? handle.readToEnd() ?? Data()
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
}
