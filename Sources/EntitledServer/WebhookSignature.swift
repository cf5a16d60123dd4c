import EntitledCrypto

/// Standard Webhooks signing (standardwebhooks.com), so receivers verify deliveries with an
/// off-the-shelf library: `webhook-id` (the event id), `webhook-timestamp` (Unix seconds) and
/// `webhook-signature: v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, where the key is
/// the secret's bytes after `whsec_` (``EntitledConfig/WebhookSecret/key(_:)``).
public enum WebhookSignature {
    /// The three headers of a delivery of `body`.
    public static func headers(
        key: [UInt8], id: String, timestamp: Int64, body: [UInt8], hmac: any HMACSHA256Computing = Digests()
    ) -> [(String, String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)),
         ("webhook-signature", signature(key: key, id: id, timestamp: timestamp, body: body, hmac: hmac))]
    }

    /// `v1,` and the base64 MAC of `{id}.{timestamp}.{body}`.
    public static func signature(
        key: [UInt8], id: String, timestamp: Int64, body: [UInt8], hmac: any HMACSHA256Computing = Digests()
    ) -> String {
        let message = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Base64.encode(hmac.hmacSHA256(key: key, message: message))
    }
}
