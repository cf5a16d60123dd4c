import AppStore
import EntitledCrypto
import Foundation
import HTTPClient
import Synchronization

@testable import Exports

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway S3-compatible server for one test: moto's `moto_server` (PyPI `moto[server]`,
/// installed by `scripts/install-deps.sh test`) on a free loopback port, with signature checking
/// on and one IAM user allowed `s3:*`.
///
/// Without `moto_server` the suites that need it are left out, with one notice saying so — except
/// in CI (`CI` set), where they run and fail: a CI run without it must not pass by skipping.
final class MotoServer: Sendable {
    let process: Process
    let endpoint: URL
    let credentials: AWSCredentials
    static let bucket = "entitled-exports"
    static let region = "us-east-1"

    /// `ENTITLED_MOTO_SERVER`, else `moto_server` in `.build/moto-venv` (where
    /// `scripts/install-deps.sh test` puts it) or on the PATH, if any.
    static let executable: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let configured = environment["ENTITLED_MOTO_SERVER"], !configured.isEmpty { return configured }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folders = [root.appendingPathComponent(".build/moto-venv/bin").path] + (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for folder in folders {
            let candidate = "\(folder)/moto_server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    /// Whether the suites that need the server run: when it is installed, and always in CI.
    static let suitesRun: Bool = {
        if executable != nil || !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty { return true }
        FileHandle.standardError.write(Data("""
            NOTE: the S3 upload tests (ExportsTests.S3UploadTests, ScheduledExportTests' s3 cases) were NOT run: moto_server is not installed.
              Install it with scripts/install-deps.sh test (moto[server] from PyPI into .build/moto-venv), or point
              ENTITLED_MOTO_SERVER at a moto_server.
              With CI set they run and fail without it.

            """.utf8))
        return false
    }()

    static let http = CurlHTTP(maxResponseBytes: 64 << 20)

    private init(process: Process, endpoint: URL, credentials: AWSCredentials) {
        self.process = process
        self.endpoint = endpoint
        self.credentials = credentials
    }

    struct Unavailable: Error, CustomStringConvertible { var description: String }

    /// Starts a server, creates the user, its key and the bucket, then turns authentication on.
    static func start() async throws -> MotoServer {
        guard let executable else { throw Unavailable(description: "moto_server is not installed, but CI is set: install it (scripts/install-deps.sh test)") }
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-H", "127.0.0.1", "-p", String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let endpoint = URL(string: "http://127.0.0.1:\(port)")!
        do {
            try await waitUntilUp(endpoint)
            let credentials = try await createUser(endpoint)
            // Before authentication is on, any key may create the bucket.
            let setup = client(endpoint, AWSCredentials(accessKeyId: "AKIASETUP", secretAccessKey: "setup"))
            _ = try await setup.send("PUT", key: nil)
            let reset = try await http.send(OutboundRequest(
                method: "POST", url: endpoint.appendingPathComponent("moto-api/reset-auth"), headers: ["Content-Type": "text/plain"],
                body: Array("0".utf8)))
            guard reset.status == 200 else { throw Unavailable(description: "moto did not turn authentication on: \(reset.status)") }
            return MotoServer(process: process, endpoint: endpoint, credentials: credentials)
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
    }

    /// Ends the server: SIGKILL, because moto_server's threaded server ignores SIGTERM.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A client of this server's bucket; `credentials` defaults to the user's.
    func client(
        credentials: AWSCredentials? = nil, http: (any OutboundHTTP)? = nil, retry: RetryPolicy = RetryPolicy(maxAttempts: 1),
        sleeper: any Sleeper = NoWait()
    ) -> S3Client {
        Self.client(endpoint, credentials ?? self.credentials, http: http ?? Self.http, retry: retry, sleeper: sleeper)
    }

    static func client(
        _ endpoint: URL, _ credentials: AWSCredentials, http: any OutboundHTTP = MotoServer.http, retry: RetryPolicy = RetryPolicy(maxAttempts: 1),
        sleeper: any Sleeper = NoWait()
    ) -> S3Client {
        S3Client(
            location: S3Location(endpoint: endpoint, region: region, bucket: bucket), credentials: credentials, http: http,
            clock: SystemClock(), retry: retry, sleeper: sleeper, random: { 0.5 }, timeoutSeconds: 60)
    }

    /// IAM CreateUser, CreateAccessKey and PutUserPolicy (`s3:*`), unauthenticated while moto allows it.
    static func createUser(_ endpoint: URL) async throws -> AWSCredentials {
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#
        _ = try await iam(endpoint, [("Action", "CreateUser"), ("UserName", "exporter")])
        let key = try await iam(endpoint, [("Action", "CreateAccessKey"), ("UserName", "exporter")])
        _ = try await iam(endpoint, [("Action", "PutUserPolicy"), ("UserName", "exporter"), ("PolicyName", "s3"), ("PolicyDocument", policy)])
        guard let id = S3XML.element("AccessKeyId", in: key), let secret = S3XML.element("SecretAccessKey", in: key) else {
            throw Unavailable(description: "moto's CreateAccessKey answered without a key")
        }
        return AWSCredentials(accessKeyId: id, secretAccessKey: secret)
    }

    static func iam(_ endpoint: URL, _ form: [(String, String)]) async throws -> [UInt8] {
        let body = Array(SigV4Signer.canonicalQuery(form + [("Version", "2010-05-08")]).utf8)
        let host = "127.0.0.1:\(endpoint.port!)"
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: "AKIASETUP", secretAccessKey: "setup"), region: region, service: "iam")
        let headers = try signer.sign(
            SigV4Signer.Request(
                method: "POST", encodedPath: "/", headers: ["Host": host, "Content-Type": "application/x-www-form-urlencoded"],
                payloadHash: Hex.encode(SHA256.hash(body))),
            at: Date())
        let response = try await http.send(OutboundRequest(method: "POST", url: endpoint.appendingPathComponent("/"), headers: headers, body: body))
        guard response.status == 200 else {
            throw Unavailable(description: "moto's IAM \(form[0].1) answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        return response.body
    }

    static func waitUntilUp(_ endpoint: URL) async throws {
        for _ in 0..<300 {
            if let response = try? await http.send(OutboundRequest(method: "GET", url: endpoint.appendingPathComponent("moto-api/"), timeoutSeconds: 2)),
                response.status < 500
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Unavailable(description: "moto_server did not answer within 30 s on \(endpoint)")
    }

    /// A port nothing listens on now: bound to port 0, read back, released.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Unavailable(description: "socket failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw Unavailable(description: "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A sleeper that records the waits asked for and returns at once.
final class NoWait: Sleeper {
    let waits = Mutex<[Int64]>([])
    func sleep(milliseconds: Int64) async throws { waits.withLock { $0.append(milliseconds) } }
}

/// The real transport behind a script: each request is recorded (`METHOD path?query`), and while
/// `answer` returns a response for it, that response is given instead of sending it.
final class ScriptedTransport: OutboundHTTP {
    let inner: any OutboundHTTP
    let answer: @Sendable (OutboundRequest, Int) -> OutboundResponse?
    let sent = Mutex<[String]>([])

    init(_ inner: any OutboundHTTP = MotoServer.http, answer: @escaping @Sendable (OutboundRequest, Int) -> OutboundResponse?) {
        self.inner = inner
        self.answer = answer
    }

    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        let index = sent.withLock { list in
            list.append("\(request.method) \(request.url.path)" + (request.url.query.map { "?\($0)" } ?? ""))
            return list.count - 1
        }
        if let scripted = answer(request, index) { return scripted }
        return try await inner.send(request)
    }
}
