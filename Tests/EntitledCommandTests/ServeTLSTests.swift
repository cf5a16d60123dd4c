import EntitledConfig
@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled serve` with a `tls` section: HTTPS from the start, a renewed certificate on SIGHUP,
/// a bad one refused while the previous one keeps serving.
@Suite(.serialized) struct ServeTLSTests {
    /// A self-signed certificate for 127.0.0.1 with `serial`, written over `cert.pem` and `key.pem`.
    static func writeCertificate(serial: Int, in folder: URL) throws {
        let result = try run(
            "openssl",
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-set_serial", "\(serial)",
             "-keyout", folder.appendingPathComponent("key.pem").path, "-out", folder.appendingPathComponent("cert.pem").path])
        #expect(result.status == 0, "\(result.output)")
    }

    /// The serial number the server on `port` presents, as `openssl x509 -serial` prints it.
    static func servedSerial(_ port: Int) throws -> String {
        let script = "openssl s_client -connect 127.0.0.1:\(port) </dev/null 2>/dev/null | openssl x509 -noout -serial"
        return try run("sh", ["-c", script]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func run(_ command: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func servesHTTPSAndReloadsTheCertificateOnSIGHUP() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-serve-tls-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.writeCertificate(serial: 0x11, in: folder)
        // Relative paths: resolved against the configuration file's folder.
        try #"{"tls": {"certificateFile": "cert.pem", "privateKeyFile": "key.pem"}}"#.write(
            to: folder.appendingPathComponent("entitled.json"), atomically: true, encoding: .utf8)
        let server = try await ServeProcess.start(
            extraArguments: ["--config", folder.appendingPathComponent("entitled.json").path], folder: folder)
        defer { server.terminate() }
        let port = server.port
        #expect(server.outputSoFar().contains(#""scheme":"https""#))
        #expect(try await blocking { try Self.servedSerial(port) } == "serial=11")

        try Self.writeCertificate(serial: 0x22, in: folder)
        kill(server.process.processIdentifier, SIGHUP)
        #expect(try await eventually { try await blocking { try Self.servedSerial(port) } == "serial=22" })
        #expect(try await eventually { server.outputSoFar().contains(#""event":"tls reloaded""#) })

        // A broken certificate file: the reload fails, is logged, and the last good one keeps serving.
        try "not a certificate".write(to: folder.appendingPathComponent("cert.pem"), atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        #expect(try await eventually { server.outputSoFar().contains(#""event":"tls reload failed""#) })
        #expect(try await blocking { try Self.servedSerial(port) } == "serial=22")
        #expect(server.process.isRunning)
    }

    @Test func tlsFilesAreResolvedAndCheckedAtLoad() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-tls-config-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.writeCertificate(serial: 7, in: folder)
        let loader = ConfigurationLoader(environment: ["TLS_KEY_FILE": folder.appendingPathComponent("key.pem").path])
        let configuration = try loader.parse(
            Data(#"{"tls": {"certificateFile": "cert.pem", "privateKeyFile": "env:TLS_KEY_FILE"}}"#.utf8),
            baseDirectory: folder.path)
        #expect(configuration.tls?.certificateFile == folder.appendingPathComponent("cert.pem").path)
        #expect(configuration.tls?.privateKeyFile == folder.appendingPathComponent("key.pem").path)
        #expect(try configuration.tls?.load().privateKeyPEM.contains("PRIVATE KEY") == true)

        let broken: [(String, String, String)] = [
            (#"{"tls": {"certificateFile": "missing.pem", "privateKeyFile": "key.pem"}}"#, "tls.certificateFile", "cannot read"),
            (#"{"tls": {"certificateFile": "key.pem", "privateKeyFile": "key.pem"}}"#, "tls.certificateFile", "no PEM certificate"),
            (#"{"tls": {"certificateFile": "cert.pem", "privateKeyFile": "cert.pem"}}"#, "tls.privateKeyFile", "no PEM private key"),
            (#"{"tls": {"certificateFile": "cert.pem", "privateKeyFile": "env:UNSET"}}"#, "tls.privateKeyFile", "UNSET"),
            (#"{"tls": {"certificateFile": "cert.pem"}}"#, "tls.privateKeyFile", "required"),
            (#"{"tls": {"certificateFile": "cert.pem", "privateKeyFile": "key.pem", "ciphers": "x"}}"#, "tls.ciphers", "unknown key"),
        ]
        for (json, path, fragment) in broken {
            do {
                _ = try loader.parse(Data(json.utf8), baseDirectory: folder.path)
                Issue.record("accepted \(json)")
            } catch {
                #expect(error.path == path, "\(json)")
                #expect(error.message.contains(fragment), "\(error.message)")
            }
        }
    }
}
