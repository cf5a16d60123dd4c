import Foundation
import HTTPServer
import Synchronization

/// A webhook receiver on loopback that answers 500 to its first `failures` requests, then 204.
final class WebhookReceiver: Sendable {
    /// The webhook secret the suites configure and verify with (Standard Webhooks form).
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    struct Delivery: Sendable {
        var id: String
        var timestamp: String
        var signature: String
        var body: [UInt8]
        var answered: Int
    }

    let failures: Int
    let received = Mutex<[Delivery]>([])
    private let server: HTTPServer

    init(failing failures: Int) throws {
        self.failures = failures
        let box = Mutex<WebhookReceiver?>(nil)
        var routes = Router()
        routes.post("/hook") { request in
            guard let receiver = box.withLock({ $0 }) else { return .text("not ready", status: 503) }
            return receiver.receive(request)
        }
        server = try HTTPServer.quietLoopback(routes)
        box.withLock { $0 = self }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(server.port)/hook")! }

    private func receive(_ request: Request) -> Response {
        received.withLock { received in
            let status = received.count < failures ? 500 : 204
            received.append(
                Delivery(
                    id: request.headers["webhook-id"] ?? "", timestamp: request.headers["webhook-timestamp"] ?? "",
                    signature: request.headers["webhook-signature"] ?? "", body: request.body, answered: status))
            return Response(status: status)
        }
    }

    func shutdown() async { await server.shutdown() }

    var deliveries: [Delivery] { received.withLock { $0 } }
}
