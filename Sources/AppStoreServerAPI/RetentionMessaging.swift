import AppStore

/// The Retention Messaging API: the messages, images and default messages the App Store shows a
/// customer about to cancel, the URL of the server's Get Retention Message endpoint, and the
/// performance test that endpoint must pass before Production calls it.
///
/// Same hosts, bearer token, retries and errors as the rest of the client; `environment` nil means
/// the configured environment (no Sandbox fallback: these calls configure one environment each).
extension AppStoreServerAPIClient {
    // MARK: Images

    /// Upload Image: `PUT /inApps/v1/messaging/image/{imageIdentifier}?imageSize=…`, the PNG bytes as the body.
    public func uploadImage(
        imageIdentifier: String, png: [UInt8], imageSize: ImageSize? = nil, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        guard !png.isEmpty, png.count <= ImageSize.maxUploadBytes else {
            throw .invalidRequest(message: "an image must be 1 byte to \(ImageSize.maxUploadBytes / 1_048_576) MiB")
        }
        let path = "/inApps/v1/messaging/image/" + (try Self.segment(imageIdentifier, name: "imageIdentifier"))
        let query = imageSize.map { [("imageSize", $0.rawValue)] } ?? []
        _ = try await send("PUT", path, query: query, body: png, contentType: "image/png", environment: environment)
    }

    /// Get Image List: `GET /inApps/v1/messaging/image/list`.
    public func imageList(environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) -> [GetImageListResponseItem] {
        try decode(GetImageListResponse.self, from: try await send("GET", "/inApps/v1/messaging/image/list", environment: environment))
            .imageIdentifiers ?? []
    }

    /// Delete Image: `DELETE /inApps/v1/messaging/image/{imageIdentifier}` (refused while a message uses it).
    public func deleteImage(imageIdentifier: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        let path = "/inApps/v1/messaging/image/" + (try Self.segment(imageIdentifier, name: "imageIdentifier"))
        _ = try await send("DELETE", path, environment: environment)
    }

    // MARK: Messages

    /// Upload Message: `PUT /inApps/v1/messaging/message/{messageIdentifier}`. Apple reviews it:
    /// it is `PENDING` until `APPROVED` (or `REJECTED`).
    public func uploadMessage(
        messageIdentifier: String, _ message: UploadMessageRequestBody, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        let path = "/inApps/v1/messaging/message/" + (try Self.segment(messageIdentifier, name: "messageIdentifier"))
        _ = try await send("PUT", path, body: try encode(message), environment: environment)
    }

    /// Get Message List: `GET /inApps/v1/messaging/message/list`.
    public func messageList(environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) -> [GetMessageListResponseItem] {
        try decode(GetMessageListResponse.self, from: try await send("GET", "/inApps/v1/messaging/message/list", environment: environment))
            .messageIdentifiers ?? []
    }

    /// Delete Message: `DELETE /inApps/v1/messaging/message/{messageIdentifier}`.
    public func deleteMessage(messageIdentifier: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        let path = "/inApps/v1/messaging/message/" + (try Self.segment(messageIdentifier, name: "messageIdentifier"))
        _ = try await send("DELETE", path, environment: environment)
    }

    // MARK: Default messages

    /// Configure Default Message: `PUT /inApps/v1/messaging/default/{productId}/{locale}`; the
    /// message must be `APPROVED`.
    public func configureDefaultMessage(
        productId: String, locale: String, messageIdentifier: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) {
        let body = try encode(DefaultConfigurationRequest(messageIdentifier: messageIdentifier))
        _ = try await send("PUT", try Self.defaultPath(productId, locale), body: body, environment: environment)
    }

    /// Get Default Message: `GET /inApps/v1/messaging/default/{productId}/{locale}`; the message identifier.
    public func defaultMessage(
        productId: String, locale: String, environment: AppStoreEnvironment? = nil
    ) async throws(ServerAPIError) -> String {
        let response = try decode(
            DefaultConfigurationResponse.self, from: try await send("GET", try Self.defaultPath(productId, locale), environment: environment))
        guard let id = response.messageIdentifier else { throw .invalidResponse(message: "no messageIdentifier") }
        return id
    }

    /// Delete Default Message: `DELETE /inApps/v1/messaging/default/{productId}/{locale}`.
    public func deleteDefaultMessage(productId: String, locale: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        _ = try await send("DELETE", try Self.defaultPath(productId, locale), environment: environment)
    }

    static func defaultPath(_ productId: String, _ locale: String) throws(ServerAPIError) -> String {
        "/inApps/v1/messaging/default/" + (try segment(productId, name: "productId")) + "/" + (try segment(locale, name: "locale"))
    }

    // MARK: Realtime URL

    /// Configure Realtime URL: `PUT /inApps/v1/messaging/realtime/url` for the environment called
    /// (Production only after a passed performance test).
    public func configureRealtimeURL(_ url: String, environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        guard url.count <= RealtimeUrlRequest.maxLength else {
            throw .invalidRequest(message: "realtimeURL must be at most \(RealtimeUrlRequest.maxLength) characters")
        }
        _ = try await send(
            "PUT", "/inApps/v1/messaging/realtime/url", body: try encode(RealtimeUrlRequest(realtimeURL: url)), environment: environment)
    }

    /// Get Realtime URL: `GET /inApps/v1/messaging/realtime/url` of the environment called.
    public func realtimeURL(environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) -> String {
        let response = try decode(
            RealtimeUrlResponse.self, from: try await send("GET", "/inApps/v1/messaging/realtime/url", environment: environment))
        guard let url = response.realtimeURL else { throw .invalidResponse(message: "no realtimeURL") }
        return url
    }

    /// Delete Realtime URL: `DELETE /inApps/v1/messaging/realtime/url` of the environment called.
    public func deleteRealtimeURL(environment: AppStoreEnvironment? = nil) async throws(ServerAPIError) {
        _ = try await send("DELETE", "/inApps/v1/messaging/realtime/url", environment: environment)
    }

    // MARK: Performance test

    /// Initiate Performance Test: `POST /inApps/v1/messaging/performanceTest`, about an active
    /// Sandbox subscription; the test always runs in Sandbox, so the call goes there.
    public func initiatePerformanceTest(originalTransactionId: String) async throws(ServerAPIError) -> PerformanceTestResponse {
        let body = try encode(PerformanceTestRequest(originalTransactionId: originalTransactionId))
        let response = try decode(
            PerformanceTestResponse.self, from: try await send("POST", "/inApps/v1/messaging/performanceTest", body: body, environment: .sandbox))
        guard response.requestId != nil else { throw .invalidResponse(message: "no requestId") }
        return response
    }

    /// Get Performance Test Results: `GET /inApps/v1/messaging/performanceTest/result/{requestId}`
    /// (`result` stays `PENDING` while the test runs).
    public func performanceTestResult(requestId: String) async throws(ServerAPIError) -> PerformanceTestResultResponse {
        let path = "/inApps/v1/messaging/performanceTest/result/" + (try Self.segment(requestId, name: "requestId"))
        return try decode(PerformanceTestResultResponse.self, from: try await send("GET", path, environment: .sandbox))
    }
}
