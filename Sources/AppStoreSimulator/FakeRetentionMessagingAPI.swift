import AppStore
import Foundation
import HTTPServer

extension FakeServerAPI {
    /// The Retention Messaging API under Apple's paths, backed by ``Simulator/retentionMessaging``:
    ///
    /// - `PUT|DELETE /inApps/v1/messaging/image/{imageIdentifier}`, `GET /inApps/v1/messaging/image/list`
    /// - `PUT|DELETE /inApps/v1/messaging/message/{messageIdentifier}`, `GET /inApps/v1/messaging/message/list`
    /// - `PUT|GET|DELETE /inApps/v1/messaging/default/{productId}/{locale}`
    /// - `PUT|GET|DELETE /inApps/v1/messaging/realtime/url`
    /// - `POST /inApps/v1/messaging/performanceTest`, `GET /inApps/v1/messaging/performanceTest/result/{requestId}`
    static func registerRetentionMessaging(
        _ simulator: Simulator,
        _ route: (HTTPMethod, String, @escaping @Sendable (Request) async throws -> Response) -> Void
    ) {
        let state = simulator.retentionMessaging
        route(.get, "/inApps/v1/messaging/image/list") { _ in try .json(await state.imageList(now: simulator.now)) }
        route(.put, "/inApps/v1/messaging/image/{imageIdentifier}") { request in
            let size = ImageSize(rawValue: request.query["imageSize"] ?? ImageSize.fullSize.rawValue)
            guard size.isKnown else { throw Failure(status: 400, code: .badRequestImageSize, message: "Invalid imageSize.") }
            try await state.uploadImage(try request.parameter("imageIdentifier"), png: request.body, size: size, now: simulator.now)
            return Response(status: 200)
        }
        route(.delete, "/inApps/v1/messaging/image/{imageIdentifier}") { request in
            try await state.deleteImage(try request.parameter("imageIdentifier"))
            return Response(status: 200)
        }
        route(.get, "/inApps/v1/messaging/message/list") { _ in try .json(await state.messageList(now: simulator.now)) }
        route(.put, "/inApps/v1/messaging/message/{messageIdentifier}") { request in
            let body = try decodeBody(UploadMessageRequestBody.self, request)
            try await state.uploadMessage(try request.parameter("messageIdentifier"), body, now: simulator.now)
            return Response(status: 200)
        }
        route(.delete, "/inApps/v1/messaging/message/{messageIdentifier}") { request in
            try await state.deleteMessage(try request.parameter("messageIdentifier"))
            return Response(status: 200)
        }
        let defaultPath = "/inApps/v1/messaging/default/{productId}/{locale}"
        route(.put, defaultPath) { request in
            let productId = try request.parameter("productId")
            guard await simulator.store.catalog.products.contains(where: { $0.id == productId }) else {
                throw Failure(status: 400, code: .invalidProductId, message: "Unknown product.")
            }
            let body = try decodeBody(DefaultConfigurationRequest.self, request)
            try await state.configureDefault(
                productId: productId, locale: try request.parameter("locale"), messageId: body.messageIdentifier, now: simulator.now)
            return Response(status: 200)
        }
        route(.get, defaultPath) { request in
            let id = try await state.getDefault(productId: try request.parameter("productId"), locale: try request.parameter("locale"))
            return try .json(DefaultConfigurationResponse(messageIdentifier: id))
        }
        route(.delete, defaultPath) { request in
            try await state.deleteDefault(productId: try request.parameter("productId"), locale: try request.parameter("locale"))
            return Response(status: 200)
        }
        route(.put, "/inApps/v1/messaging/realtime/url") { request in
            let body = try decodeBody(RealtimeUrlRequest.self, request)
            try await state.configureRealtimeURL(body.realtimeURL, production: await simulator.store.environment == .production)
            return Response(status: 200)
        }
        route(.get, "/inApps/v1/messaging/realtime/url") { _ in
            try .json(RealtimeUrlResponse(realtimeURL: try await state.requireRealtimeURL()))
        }
        route(.delete, "/inApps/v1/messaging/realtime/url") { _ in
            try await state.deleteRealtimeURL()
            return Response(status: 200)
        }
        route(.post, "/inApps/v1/messaging/performanceTest") { request in
            let body = try decodeBody(PerformanceTestRequest.self, request)
            guard let id = body.originalTransactionId, let template = await simulator.realtimeRequestTemplate(originalTransactionId: id)
            else {
                throw Failure(
                    status: 400, code: .invalidPerformanceTestRequest,
                    message: "originalTransactionId must be an active Sandbox auto-renewable subscription.")
            }
            let signer = simulator.signer.signer
            let clock = simulator.clock
            return try .json(
                try await state.startPerformanceTest {
                    var payload = template
                    payload.requestIdentifier = UUID().uuidString.lowercased()
                    payload.signedDate = clock.nowMilliseconds()
                    return Array(try JSONEncoder().encode(["signedPayload": try signer.sign(payload)]))
                })
        }
        route(.get, "/inApps/v1/messaging/performanceTest/result/{requestId}") { request in
            try .json(try await state.performanceTestResult(try request.parameter("requestId")))
        }
    }

    /// `request`'s JSON body as `type`, or Apple's 400.
    static func decodeBody<T: Decodable>(_ type: T.Type, _ request: Request) throws -> T {
        guard let value = try? JSONDecoder().decode(type, from: Data(request.body)) else {
            throw Failure(status: 400, code: .generalBadRequest, message: "The request body is not valid JSON of the expected shape.")
        }
        return value
    }
}

extension Simulator {
    /// A realtime request about the active Sandbox subscription `originalTransactionId` (its
    /// `requestIdentifier` and `signedDate` left to set); nil when there is no such subscription.
    func realtimeRequestTemplate(originalTransactionId: String) -> DecodedRealtimeRequestBody? {
        guard store.environment == .sandbox, let sub = store.subscriptions[originalTransactionId], sub.state == .active else { return nil }
        return DecodedRealtimeRequestBody(
            originalTransactionId: originalTransactionId, appAppleId: store.catalog.appAppleId, productId: sub.productId,
            userLocale: "en-US", environment: store.environment)
    }
}
