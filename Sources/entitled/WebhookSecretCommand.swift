import EntitledConfig

/// `entitled webhook-secret`: prints a new webhook signing secret.
enum WebhookSecretCommand: Command {
    static let name = "webhook-secret"
    static let summary = "print a new webhook signing secret (whsec_…)"
    static let help = """
        Usage: entitled webhook-secret

        Prints a new secret for a webhook endpoint: whsec_ and the base64 of 32 random bytes, the
        Standard Webhooks form. Put it in the endpoint's "secret" (or an environment variable named
        by "env:NAME") and give the same secret to the receiver's verifying library.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        try arguments.finish()
        print(WebhookSecret.generate())
        return ExitStatus.ok
    }
}
