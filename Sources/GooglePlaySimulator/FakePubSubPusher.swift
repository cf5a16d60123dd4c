import EntitledCrypto
import Foundation
import GooglePlay
import HTTPClient
import Synchronization

/// Cloud Pub/Sub's push delivery, faked: wraps each of the fake Google's notifications in a push
/// envelope and POSTs it to an endpoint with an `Authorization: Bearer` OIDC token signed by the
/// fake's key (verifiable against its JWKS), as a push subscription with authentication does.
public final class FakePubSubPusher: Sendable {
    /// The claims written into each push token.
    public struct Identity: Sendable, Hashable {
        /// The push subscription's audience.
        public var audience: String
        /// The service account the subscription pushes as.
        public var serviceAccountEmail: String
        public var issuer: String
        public var emailVerified: Bool

        public init(audience: String, serviceAccountEmail: String, issuer: String = "https://accounts.google.com", emailVerified: Bool = true) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.issuer = issuer
            self.emailVerified = emailVerified
        }
    }

    /// One push's outcome.
    public struct Delivery: Sendable, Hashable {
        public var messageId: String
        /// The endpoint's status, nil when no answer arrived.
        public var status: Int?
        public var notification: DeveloperNotification
    }

    public let google: FakeGoogle
    public let endpoint: URL
    public let identity: Identity
    /// `projects/{project}/subscriptions/{subscription}`.
    public let subscription: String
    private let transport: any OutboundHTTP
    private let sequence = Mutex(0)

    public init(
        google: FakeGoogle, endpoint: URL, identity: Identity, transport: any OutboundHTTP,
        subscription: String = "projects/fake-project/subscriptions/play-rtdn"
    ) {
        self.google = google
        self.endpoint = endpoint
        self.identity = identity
        self.transport = transport
        self.subscription = subscription
    }

    /// The push token for now, signed with the fake Google's key.
    public func token() throws(CryptoError) -> String {
        let now = google.clock.nowMilliseconds() / 1000
        return try RS256JWT.sign(
            claims: Claims(
                aud: identity.audience, azp: "100000000000000000001", email: identity.serviceAccountEmail, email_verified: identity.emailVerified,
                exp: now + 3600, iat: now, iss: identity.issuer, sub: "100000000000000000001"),
            keyId: google.signingKeyId, key: google.signingKey)
    }

    struct Claims: Encodable {
        var aud: String
        var azp: String
        var email: String
        var email_verified: Bool
        var exp: Int64
        var iat: Int64
        var iss: String
        var sub: String
    }

    /// The body and headers of a push of `notification` (for tests that post it themselves).
    public func request(for notification: DeveloperNotification, messageId: String? = nil) throws(CryptoError) -> OutboundRequest {
        let id = messageId ?? String(sequence.withLock { value in
            value += 1
            return 9_000_000_000_000 + value
        })
        let publishTime = GoogleTimestamp(milliseconds: google.clock.nowMilliseconds())
        let envelope = PubSubPushEnvelope(
            message: PubSubMessage(data: Base64.encode(PlayJSON.encode(notification)), messageId: id, publishTime: publishTime, attributes: [:]),
            subscription: subscription)
        return OutboundRequest(
            method: "POST", url: endpoint,
            headers: ["Content-Type": "application/json", "Authorization": "Bearer " + (try token()), "User-Agent": "APIs-Google"],
            body: PlayJSON.encode(envelope), timeoutSeconds: 10)
    }

    /// Pushes every queued notification once, oldest first; answers each outcome. Pub/Sub would
    /// redeliver a failed push later; here the caller decides (the notifications are returned).
    public func deliverPending() async -> [Delivery] {
        var out: [Delivery] = []
        for notification in google.takeNotifications() {
            guard let request = try? request(for: notification) else { continue }
            let messageId = (try? PubSubPushEnvelope.decode(request.body ?? []))?.message.messageId ?? ""
            let status: Int?
            do {
                status = try await transport.send(request).status
            } catch {
                status = nil
            }
            out.append(Delivery(messageId: messageId, status: status, notification: notification))
        }
        return out
    }
}
