import Foundation
import HTTPServer

/// The `tls` section: HTTPS on the listening address, from PEM files read at start and again on
/// SIGHUP (a renewed certificate is served without a restart).
public struct TLSSettings: Sendable, Equatable {
    /// Absolute path of the PEM certificate chain (the server's certificate first).
    public var certificateFile: String
    /// Absolute path of the PEM private key (unencrypted).
    public var privateKeyFile: String

    public init(certificateFile: String, privateKeyFile: String) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
    }

    /// Largest certificate chain or key file read (a chain of a few certificates is a few kB).
    public static let maxFileBytes = 1 << 20

    /// Reads both files and checks that they hold PEM of the right kind. Whether GnuTLS accepts
    /// the pair (and the key matches) is checked by ``TLSCredentials/check()`` when it is served.
    public func load() throws(ConfigurationError) -> TLSCredentials {
        let certificate = try Self.read(certificateFile, path: "tls.certificateFile")
        guard certificate.contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigurationError(path: "tls.certificateFile", message: "'\(certificateFile)' holds no PEM certificate")
        }
        let key = try Self.read(privateKeyFile, path: "tls.privateKeyFile")
        guard key.contains("-----BEGIN ") && key.contains("PRIVATE KEY-----") else {
            throw ConfigurationError(path: "tls.privateKeyFile", message: "'\(privateKeyFile)' holds no PEM private key")
        }
        guard !key.contains("ENCRYPTED") else {
            throw ConfigurationError(path: "tls.privateKeyFile", message: "'\(privateKeyFile)' is encrypted; give the key unencrypted")
        }
        return TLSCredentials(certificateChainPEM: certificate, privateKeyPEM: key)
    }

    private static func read(_ file: String, path: String) throws(ConfigurationError) -> String {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw ConfigurationError(path: path, message: "cannot read '\(file)'")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maxFileBytes + 1)) ?? nil
        guard let data, data.count <= maxFileBytes else {
            throw ConfigurationError(path: path, message: "'\(file)' is empty, unreadable or larger than \(maxFileBytes) bytes")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

extension ConfigurationLoader {
    /// `{"certificateFile": …, "privateKeyFile": …}`: paths relative to the configuration file's
    /// folder, or `env:NAME`; both files are read and checked now so a bad pair stops the start.
    /// Nil when a key's problem was recorded.
    func tls(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> TLSSettings? {
        var object = try node.object()
        func file(_ key: String, _ use: String) -> String? {
            problems.check { () throws(ConfigurationError) -> String in
                let value = try object.require(key)
                let raw = try resolveSecret(try value.string(), path: value.path, use: use)
                // Absolute, so that a message about it names the file tried.
                return Self.absolutePath(raw, relativeTo: baseDirectory)
            }
        }
        let certificate = file("certificateFile", "the path of the TLS certificate chain")
        let key = file("privateKeyFile", "the path of the TLS private key")
        object.finish(problems)
        // Commands that only need the database neither serve TLS nor need to read its key.
        guard let certificate, let key, resolvesSecrets else { return nil }
        let settings = TLSSettings(certificateFile: certificate, privateKeyFile: key)
        _ = try settings.load()
        return settings
    }
}

/// The `log` section: how standard output's lines look and which are written.
public struct LogSettings: Sendable, Equatable {
    /// nil: JSON lines, or text when standard output is a terminal.
    public var format: LogFormat?
    /// Lines below it are not written.
    public var level: LogLevel = .info

    public init(format: LogFormat? = nil, level: LogLevel = .info) {
        self.format = format
        self.level = level
    }
}

extension ConfigurationLoader {
    /// `{"format": "json"|"text", "level": "debug"|"info"|"warn"|"error"}`.
    func log(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> LogSettings {
        var object = try node.object()
        var settings = LogSettings()
        object.read("format", problems) { value throws(ConfigurationError) in
            settings.format = try Self.logFormat(try value.string(), path: value.path)
        }
        object.read("level", problems) { value throws(ConfigurationError) in
            settings.level = try Self.logLevel(try value.string(), path: value.path)
        }
        object.finish(problems)
        return settings
    }

    /// `json` or `text` (the `log.format` key and `--log-format`).
    public static func logFormat(_ raw: String, path: String) throws(ConfigurationError) -> LogFormat {
        guard let format = LogFormat(rawValue: raw) else {
            throw ConfigurationError(path: path, message: "must be 'json' or 'text'")
        }
        return format
    }

    /// `debug`, `info`, `warn` or `error` (the `log.level` key and `--log-level`).
    public static func logLevel(_ raw: String, path: String) throws(ConfigurationError) -> LogLevel {
        guard let level = LogLevel(rawValue: raw) else {
            throw ConfigurationError(path: path, message: "must be one of debug, info, warn, error")
        }
        return level
    }
}
