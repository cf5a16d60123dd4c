import Exports
import Foundation

/// One scheduled export (`exports[]`): which tables go where, in which format, how often.
public struct ExportSettings: Sendable, Hashable {
    public var destination: ExportDestination
    public var format: ExportFormat = .csv
    /// Hours between two exports. Default 24, 1…720.
    public var everyHours = 24
    /// The tables exported, in this order; default all.
    public var tables: [ExportTable] = ExportTable.allCases
    /// An S3-compatible store's `scheme://host[:port]` (MinIO, R2, GCS interop); nil is AWS.
    public var endpoint: URL?
    /// The signing region (`s3://` only).
    public var region = ExportSettings.defaultRegion
    /// `s3://` only: read from the environment (`env:NAME`), never logged.
    public var credentials: AWSCredentials?

    public static let maxExports = 10
    public static let everyHoursRange = 1...720
    public static let defaultRegion = "us-east-1"

    public init(destination: ExportDestination) { self.destination = destination }

    /// The store and bucket of an `s3://` destination; nil for `file://`.
    public var s3Location: S3Location? {
        guard case .s3(let bucket, _) = destination else { return nil }
        return S3Location(endpoint: endpoint, region: region, bucket: bucket)
    }
}

extension ConfigurationLoader {
    /// Parses `exports`: at most ``ExportSettings/maxExports``, destinations unique.
    func exports(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> [ExportSettings] {
        let nodes = try node.array()
        guard nodes.count <= ExportSettings.maxExports else {
            throw ConfigurationError(path: node.path, message: "at most \(ExportSettings.maxExports) exports")
        }
        var seen = Set<ExportDestination>()
        var exports: [ExportSettings] = []
        for element in nodes {
            guard let export = problems.check({ () throws(ConfigurationError) in try self.export(element, problems) }) else { continue }
            guard seen.insert(export.destination).inserted else {
                problems.record(ConfigurationError(path: element.path + ".destination", message: "duplicate destination '\(export.destination)'"))
                continue
            }
            exports.append(export)
        }
        return exports
    }

    /// Parses one `exports[]` entry; problems of optional keys are recorded and parsing goes on.
    func export(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> ExportSettings {
        var object = try node.object()
        let destinationNode = try object.require("destination")
        let raw = try destinationNode.string()
        var export: ExportSettings
        do {
            export = ExportSettings(destination: try ExportDestination(parsing: raw))
        } catch {
            throw ConfigurationError(path: destinationNode.path, message: error.message)
        }
        object.read("format", problems) { value throws(ConfigurationError) in
            let name = try value.string()
            guard let format = ExportFormat(rawValue: name) else {
                throw ConfigurationError(path: value.path, message: "expected one of \(ExportFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            export.format = format
        }
        object.read("everyHours", problems) { value throws(ConfigurationError) in
            export.everyHours = try Self.bounded(value, ExportSettings.everyHoursRange)
        }
        object.read("tables", problems) { value throws(ConfigurationError) in
            let elements = try value.array()
            guard !elements.isEmpty else { throw ConfigurationError(path: value.path, message: "must not be empty") }
            var tables: [ExportTable] = []
            for element in elements {
                problems.check { () throws(ConfigurationError) in
                    let name = try element.string()
                    guard let table = ExportTable(rawValue: name) else {
                        let known = ExportTable.allCases.map(\.rawValue).joined(separator: ", ")
                        throw ConfigurationError(path: element.path, message: "unknown table '\(name)' (one of \(known))")
                    }
                    guard !tables.contains(table) else { throw ConfigurationError(path: element.path, message: "duplicate table '\(name)'") }
                    tables.append(table)
                }
            }
            export.tables = tables
        }
        if case .file = export.destination {
            for key in ["endpoint", "region", "accessKeyId", "secretAccessKey", "sessionToken"] {
                object.read(key, problems) { value throws(ConfigurationError) in
                    throw ConfigurationError(path: value.path, message: "only for s3:// destinations")
                }
            }
            object.finish(problems)
            return export
        }
        object.read("endpoint", problems) { value throws(ConfigurationError) in
            let text = try value.string()
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
                url.path.isEmpty || url.path == "/", url.query == nil, url.user == nil
            else {
                throw ConfigurationError(path: value.path, message: "expected http(s)://host[:port] without a path, such as https://ACCOUNT.r2.cloudflarestorage.com")
            }
            export.endpoint = URL(string: "\(url.scheme!.lowercased())://\(url.host!)" + (url.port.map { ":\($0)" } ?? ""))
        }
        object.read("region", problems) { value throws(ConfigurationError) in
            let region = try value.string()
            guard (1...64).contains(region.utf8.count), region.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
            else { throw ConfigurationError(path: value.path, message: "expected a region such as us-east-1 (R2: auto)") }
            export.region = region
        }
        let use = "a credential of export \(node.path)"
        let idNode = try object.require("accessKeyId")
        let secretNode = try object.require("secretAccessKey")
        let id = problems.check { () throws(ConfigurationError) in try resolveSecret(try idNode.string(), path: idNode.path, use: use) }
        let secret = problems.check { () throws(ConfigurationError) in
            try resolveSecret(try secretNode.string(), path: secretNode.path, use: use)
        }
        var token: String?
        object.read("sessionToken", problems) { value throws(ConfigurationError) in
            token = try resolveSecret(try value.string(), path: value.path, use: use)
        }
        object.finish(problems)
        guard let id, let secret else { throw ConfigurationError.unresolvedSecret(path: secretNode.path) }
        export.credentials = AWSCredentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token)
        return export
    }
}
