import EntitledConfig
import EntitledServer
import Foundation

/// `entitled _webhook-sign` (a test helper): signs standard input as a webhook delivery would, for
/// `scripts/webhook-check.sh` to verify with an independent Standard Webhooks implementation.
enum WebhookSignCommand: Command {
    static let name = "_webhook-sign"
    static let summary = "test helper: sign standard input as a webhook delivery"
    static let help = """
        Usage: entitled _webhook-sign --secret whsec_… --id ID --timestamp UNIX_SECONDS < BODY

        Prints the delivery's headers, one `name: value` per line.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let secret = try arguments.option("--secret"), let key = WebhookSecret.key(secret) else {
            throw UsageError("--secret must be a whsec_ secret")
        }
        guard let id = try arguments.option("--id") else { throw UsageError("--id is required") }
        guard let timestamp = try arguments.option("--timestamp", as: "Unix seconds", { Int64($0) }) else {
            throw UsageError("--timestamp is required")
        }
        try arguments.finish()
        let body = Array(FileHandle.standardInput.readDataToEndOfFile().prefix(1 << 20))
        for (name, value) in WebhookSignature.headers(key: key, id: id, timestamp: timestamp, body: body) { print("\(name): \(value)") }
        return ExitStatus.ok
    }
}
