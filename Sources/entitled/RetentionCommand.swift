import AppStore
import EntitledServer
import Foundation

/// `entitled retention …`: Apple's Retention Messaging API for one app (messages, images, default
/// messages, the realtime URL, the performance test).
enum RetentionCommand: Command {
    static let name = "retention"
    static let summary = "manage retention messages, images, defaults, the realtime URL and performance tests"
    static let help = """
        Usage: entitled retention <group> <verb> [ARGUMENTS] [--config FILE] [--app BUNDLE] [--environment ENV]

        Calls Apple's Retention Messaging API with the app's serverAPI key (the same key, hosts,
        retries and errors as 'reconcile'); no other secret of the configuration is read, and no
        database is opened. Identifiers of messages and images are UUIDs you choose.
        Uploads are reviewed by Apple: PENDING, then APPROVED or REJECTED ('… list' shows which).

          messages list
          messages upload MESSAGE_ID --header TEXT --body TEXT [--image IMAGE_ID --alt-text TEXT]
                          [--header-position ABOVE_BODY|ABOVE_IMAGE]
          messages upload MESSAGE_ID --file BODY.json   Apple's UploadMessageRequestBody (bullet points)
          messages delete MESSAGE_ID
          images list
          images upload IMAGE_ID FILE.png [--size FULL_SIZE|BULLET_POINT]   (default FULL_SIZE)
          images delete IMAGE_ID
          default get|delete PRODUCT_ID LOCALE
          default set PRODUCT_ID LOCALE MESSAGE_ID    the message must be APPROVED
          url get|delete
          url set URL                 your server's POST /v1/apple/retention (https://…, ≤ 256 characters);
                                      Production only after a performance test passed
          performance-test start ORIGINAL_TRANSACTION_ID   an active Sandbox subscription; runs in Sandbox
          performance-test result REQUEST_ID [--wait]      PENDING, then PASS or FAIL with response times;
                                                           --wait asks every second until it is decided

        Options:
          --config FILE        the server's configuration (env ENTITLED_CONFIG)
          --app BUNDLE         the app (default: the only app with serverAPI)
          --environment ENV    Production or Sandbox (default: the app's first of the two; the
                               performance test always runs in Sandbox)

        Exit status 0, 1 when Apple refused or could not be reached (its errorCode is printed),
        2 for bad input. docs/retention.md#managing-messages-from-the-cli walks through the setup.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        // Only the Server API key is needed: other `env:` secrets may be missing where an operator runs this.
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false, resolvingServerAPIKeys: true)
        let app = try arguments.option("--app")
        let environment = try arguments.option("--environment", as: "Production or Sandbox") { raw in
            [AppStoreEnvironment.production, .sandbox].first { $0.rawValue.lowercased() == raw.lowercased() }
        }
        let operation = try parse(&arguments)
        try arguments.finish()
        print(try await runRetention(operation, configuration: configuration, bundleId: app, environment: environment))
        return ExitStatus.ok
    }

    /// The operation named by the group, the verb and their arguments.
    static func parse(_ arguments: inout Arguments) throws -> RetentionOperation {
        let groups = ["messages", "images", "default", "url", "performance-test"]
        guard let group = arguments.first, groups.contains(group) else {
            throw UsageError("expected one of \(groups.joined(separator: ", ")) (see 'entitled retention --help')")
        }
        arguments.dropFirst()
        guard let verb = arguments.first else { throw UsageError("\(group): missing verb (see 'entitled retention --help')") }
        arguments.dropFirst()
        switch (group, verb) {
        case ("messages", "list"): return try none(&arguments, .listMessages)
        case ("messages", "upload"): return try uploadMessage(&arguments)
        case ("messages", "delete"): return .deleteMessage(id: try one(&arguments, "MESSAGE_ID"))
        case ("images", "list"): return try none(&arguments, .listImages)
        case ("images", "upload"):
            let size = try arguments.option("--size", as: "FULL_SIZE or BULLET_POINT") { ImageSize(rawValue: $0.uppercased()).known }
            let values = try exactly(&arguments, ["IMAGE_ID", "FILE.png"])
            return .uploadImage(id: values[0], png: try read(values[1], limit: ImageSize.maxUploadBytes), size: size)
        case ("images", "delete"): return .deleteImage(id: try one(&arguments, "IMAGE_ID"))
        case ("default", "get"):
            let values = try exactly(&arguments, ["PRODUCT_ID", "LOCALE"])
            return .getDefault(productId: values[0], locale: values[1])
        case ("default", "set"):
            let values = try exactly(&arguments, ["PRODUCT_ID", "LOCALE", "MESSAGE_ID"])
            return .setDefault(productId: values[0], locale: values[1], messageId: values[2])
        case ("default", "delete"):
            let values = try exactly(&arguments, ["PRODUCT_ID", "LOCALE"])
            return .deleteDefault(productId: values[0], locale: values[1])
        case ("url", "get"): return try none(&arguments, .getURL)
        case ("url", "set"): return .setURL(try one(&arguments, "URL"))
        case ("url", "delete"): return try none(&arguments, .deleteURL)
        case ("performance-test", "start"): return .startPerformanceTest(originalTransactionId: try one(&arguments, "ORIGINAL_TRANSACTION_ID"))
        case ("performance-test", "result"):
            let wait = arguments.flag("--wait")
            return .performanceTestResult(requestId: try one(&arguments, "REQUEST_ID"), wait: wait)
        default: throw UsageError("\(group): unknown verb '\(verb)' (see 'entitled retention --help')")
        }
    }

    static func uploadMessage(_ arguments: inout Arguments) throws -> RetentionOperation {
        let file = try arguments.option("--file")
        let header = try arguments.option("--header")
        let body = try arguments.option("--body")
        let image = try arguments.option("--image")
        let altText = try arguments.option("--alt-text")
        let position = try arguments.option("--header-position", as: "ABOVE_BODY or ABOVE_IMAGE") { HeaderPosition(rawValue: $0.uppercased()).known }
        let id = try one(&arguments, "MESSAGE_ID")
        if let file {
            guard header == nil, body == nil, image == nil, altText == nil, position == nil else {
                throw UsageError("--file replaces --header, --body, --image, --alt-text and --header-position")
            }
            do {
                return .uploadMessage(id: id, try AppStoreJSON.decode(UploadMessageRequestBody.self, from: Data(try read(file, limit: 65_536))))
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError("\(file): not an UploadMessageRequestBody: \(error)")
            }
        }
        guard let header, let body else { throw UsageError("--header and --body are required (or --file)") }
        guard (image == nil) == (altText == nil) else { throw UsageError("--image and --alt-text go together") }
        let attached = image.map { UploadMessageImage(imageIdentifier: $0, altText: altText) }
        return .uploadMessage(id: id, UploadMessageRequestBody(header: header, body: body, image: attached, headerPosition: position))
    }

    static func none(_ arguments: inout Arguments, _ operation: RetentionOperation) throws -> RetentionOperation {
        _ = try exactly(&arguments, [])
        return operation
    }

    static func one(_ arguments: inout Arguments, _ name: String) throws -> String { try exactly(&arguments, [name])[0] }

    /// The positional arguments, exactly as many as `names`.
    static func exactly(_ arguments: inout Arguments, _ names: [String]) throws -> [String] {
        let values = try arguments.positionals()
        guard values.count == names.count else {
            throw UsageError(names.isEmpty ? "unexpected argument '\(values[0])'" : "expected \(names.joined(separator: " "))")
        }
        return values
    }

    /// A file's bytes, refused above `limit`.
    static func read(_ path: String, limit: Int) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read \(path)") }
        guard data.count <= limit else { throw UsageError("\(path) is larger than \(limit) bytes") }
        return Array(data)
    }
}

extension AppStoreEnumeration {
    /// Self when Apple documents it, else nil.
    var known: Self? { isKnown ? self : nil }
}
