import Foundation
import HTTPServer
import Testing

/// A throwaway certificate authority made with the `openssl` command at test time, and server
/// certificates for 127.0.0.1 it signs.
final class TestCA: Sendable {
    let folder: URL
    var caFile: String { folder.appendingPathComponent("ca.pem").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-tls-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.openssl(
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=Entitled Test CA", "-keyout", "ca.key", "-out", "ca.pem"], in: folder)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// A server certificate for 127.0.0.1 and localhost with this serial number, and its key.
    func server(serial: Int) throws -> TLSCredentials {
        let name = "server-\(serial)"
        try Self.openssl(
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
             "-keyout", "\(name).key", "-out", "\(name).csr"], in: folder)
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            to: folder.appendingPathComponent("ext"), atomically: true, encoding: .utf8)
        try Self.openssl(
            ["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "\(serial)",
             "-days", "1", "-extfile", "ext", "-out", "\(name).pem"], in: folder)
        return TLSCredentials(
            certificateChainPEM: try String(contentsOf: folder.appendingPathComponent("\(name).pem"), encoding: .utf8),
            privateKeyPEM: try String(contentsOf: folder.appendingPathComponent("\(name).key"), encoding: .utf8))
    }

    static func openssl(_ arguments: [String], in folder: URL) throws {
        let result = try Command.run("/usr/bin/env", ["openssl"] + arguments, in: folder)
        guard result.status == 0 else { throw Command.Failure(output: result.error) }
    }
}

/// Runs a command to its end, collecting its output.
enum Command {
    struct Failure: Error { var output: String }

    static func run(_ path: String, _ arguments: [String], in folder: URL? = nil, input: String? = nil)
        throws -> (status: Int32, output: String, error: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let folder { process.currentDirectoryURL = folder }
        let output = Pipe()
        let error = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = standardInput
        try process.run()
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try standardInput.fileHandleForWriting.close()
        // Read both to their end before waiting: a full pipe would block the child.
        let errorData = LockedBox(Data())
        let done = DispatchSemaphore(value: 0)
        let errorReader = Thread {
            errorData.set(error.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }
        errorReader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData.get(), as: UTF8.self)
        )
    }
}

final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ new: Value) { lock.withLock { value = new } }
}

/// `curl` against the server with the test CA; returns the exit status and what it printed.
func curl(_ port: Int, ca: TestCA, _ options: [String] = [], path: String = "/healthz") throws -> (status: Int32, output: String, error: String) {
    try Command.run("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "--cacert", ca.caFile] + options + ["https://127.0.0.1:\(port)\(path)"])
}

/// The serial number (hex, as `openssl x509 -serial` prints it) of the certificate the server presents.
func servedSerial(_ port: Int) throws -> String {
    let script = "openssl s_client -connect 127.0.0.1:\(port) </dev/null 2>/dev/null | openssl x509 -noout -serial"
    let result = try Command.run("/bin/sh", ["-c", script])
    return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite(.serialized) struct TLSTests {
    @Test func servesTLS12AndTLS13AndRefusesOlderVersionsAndWeakCiphers() async throws {
        let ca = try TestCA()
        let credentials = try ca.server(serial: 0x1001)
        try await withServer(configure: { $0.tls = credentials }) { server in
            let port = server.port
            let results = try await blocking {
                [
                    "1.2": try curl(port, ca: ca, ["--tlsv1.2", "--tls-max", "1.2"]),
                    "1.3": try curl(port, ca: ca, ["--tlsv1.3"]),
                    // SECLEVEL=0 lets the client offer TLS 1.0/1.1: the refusal must be the server's.
                    "1.1": try curl(port, ca: ca, ["--tlsv1", "--tls-max", "1.1", "--ciphers", "DEFAULT:@SECLEVEL=0"]),
                    "cbc": try curl(port, ca: ca, ["--tlsv1.2", "--tls-max", "1.2", "--ciphers", "ECDHE-ECDSA-AES128-SHA"]),
                    "plain": try Command.run("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "http://127.0.0.1:\(port)/healthz"]),
                ]
            }
            #expect(results["1.2"]?.status == 0)
            #expect(results["1.2"]?.output == "ok")
            #expect(results["1.3"]?.status == 0)
            #expect(results["1.3"]?.output == "ok")
            #expect(results["1.1"]?.status == 35, "\(results["1.1"]?.error ?? "")")
            // The handshake reached the server (a client that cannot offer TLS 1.1 says so instead).
            #expect(results["1.1"]?.error.contains("no protocols available") == false, "\(results["1.1"]?.error ?? "")")
            #expect(results["cbc"]?.status == 35, "\(results["cbc"]?.error ?? "")")
            #expect(results["plain"]?.status != 0)
        }
    }

    @Test func refusesAKeyThatDoesNotMatchTheCertificate() throws {
        let ca = try TestCA()
        let first = try ca.server(serial: 1)
        let second = try ca.server(serial: 2)
        let mismatched = TLSCredentials(certificateChainPEM: first.certificateChainPEM, privateKeyPEM: second.privateKeyPEM)
        #expect(throws: HTTPServer.StartError.self) { try mismatched.check() }
        #expect(throws: HTTPServer.StartError.self) {
            try TLSCredentials(certificateChainPEM: "not PEM", privateKeyPEM: first.privateKeyPEM).check()
        }
        try first.check()
    }

    @Test func reloadServesTheNewCertificateWhileAnOpenConnectionCompletes() async throws {
        let ca = try TestCA()
        let credentials = try ca.server(serial: 0xA1)
        let renewed = try ca.server(serial: 0xB2)
        try await withServer(configure: { $0.tls = credentials }) { server in
            let port = server.port
            #expect(try await blocking { try servedSerial(port) } == "serial=A1")
            // A keep-alive connection opened before the reload.
            let client = try await blocking { try TLSClient(port: port, caFile: ca.caFile) }
            let before = try await blocking { try client.get("/healthz") }
            #expect(before.hasPrefix("HTTP/1.1 200"))
            #expect(!before.lowercased().contains("connection: close"))

            // A bad pair is refused and the old certificate keeps serving.
            #expect(throws: HTTPServer.StartError.self) {
                try server.reloadTLS(TLSCredentials(certificateChainPEM: renewed.certificateChainPEM, privateKeyPEM: credentials.privateKeyPEM))
            }
            #expect(try await blocking { try servedSerial(port) } == "serial=A1")

            try server.reloadTLS(renewed)
            #expect(try await blocking { try servedSerial(port) } == "serial=B2")
            #expect(try await blocking { try curl(port, ca: ca) }.output == "ok")
            // The old connection still gets its answer, then is closed (its daemon is retiring).
            let after = try await blocking { try client.get("/healthz") }
            #expect(after.hasPrefix("HTTP/1.1 200"))
            #expect(after.lowercased().contains("connection: close"))
            client.close()
        }
    }
}

/// One TLS connection through `openssl s_client`, for requests on the same connection.
final class TLSClient: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let received = LockedBox(Data())
    private let arrived = DispatchSemaphore(value: 0)

    init(port: Int, caFile: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "s_client", "-quiet", "-verify_return_error", "-CAfile", caFile, "-connect", "127.0.0.1:\(port)"]
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = output.fileHandleForReading
        Thread.detachNewThread { [received, arrived] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                received.set(received.get() + chunk)
                arrived.signal()
            }
            arrived.signal()
        }
    }

    /// Sends a GET and returns the response head and body (the body is "ok" on the test routes).
    func get(_ path: String) throws -> String {
        received.set(Data())
        input.fileHandleForWriting.write(Data("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let deadline = DispatchTime.now() + .seconds(10)
        while true {
            let text = String(decoding: received.get(), as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n"), text[end.upperBound...].hasSuffix("ok") { return text }
            if arrived.wait(timeout: deadline) == .timedOut { throw Command.Failure(output: "no answer: \(text)") }
        }
    }

    func close() {
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }
}
