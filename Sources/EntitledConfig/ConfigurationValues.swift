import Foundation
import HTTPServer
import Storage

// The values a configuration holds, each read from its text: secrets from the environment,
// listen addresses, database URLs and SQLite paths.

extension ConfigurationLoader {
    /// `raw`, or for `env:NAME` the variable's value. `use` says what the value is for, so that a
    /// missing variable's message says why it is needed. Without ``resolvesSecrets``, an `env:`
    /// value throws a problem that is not reported: what needs it is left out.
    func resolveSecret(_ raw: String, path: String, use: String, resolves: Bool? = nil) throws(ConfigurationError) -> String {
        guard raw.hasPrefix("env:") else { return raw }
        guard resolves ?? resolvesSecrets else { throw ConfigurationError.unresolvedSecret(path: path) }
        let name = String(raw.dropFirst(4))
        guard let value = environment[name], !value.isEmpty else {
            throw ConfigurationError(path: path, message: "environment variable \(name) is not set (it holds \(use))")
        }
        return value
    }

    static func listenAddress(_ raw: String, path: String) throws(ConfigurationError) -> ListenAddress {
        guard let address = ListenAddress(parsing: raw) else {
            throw ConfigurationError(path: path, message: "'\(raw)' is not HOST:PORT")
        }
        return address
    }

    /// `database`: a URL, or `{"primary": URL, "replicas": [URL], "readYourWrites": …}` (PostgreSQL
    /// only, at most 16 replicas).
    static func database(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> (String, [String], ReadYourWrites) {
        if let raw = node.value as? String { return (try databaseURL(raw, path: node.path), [], .allServers) }
        var object = try node.object()
        let primaryNode = try object.require("primary")
        let primary = try databaseURL(try primaryNode.string(), path: primaryNode.path)
        var replicas: [String] = []
        object.read("replicas", problems) { list throws(ConfigurationError) in
            let nodes = try list.array()
            guard nodes.count <= 16 else { throw ConfigurationError(path: list.path, message: "at most 16 replicas") }
            for replica in nodes {
                let url = try databaseURL(try replica.string(), path: replica.path)
                guard case .postgres = try? DatabaseURL(parsing: url) else {
                    throw ConfigurationError(path: replica.path, message: "a replica must be a postgres:// URL")
                }
                replicas.append(url)
            }
        }
        var readYourWrites = ReadYourWrites.allServers
        object.read("readYourWrites", problems) { value throws(ConfigurationError) in
            guard let choice = ReadYourWrites(rawValue: try value.string()) else {
                throw ConfigurationError(path: value.path, message: "must be 'allServers' or 'thisServer'")
            }
            readYourWrites = choice
        }
        object.finish(problems)
        let primaryIsPostgres: Bool = if case .postgres = try? DatabaseURL(parsing: primary) { true } else { false }
        guard replicas.isEmpty || primaryIsPostgres else {
            throw ConfigurationError(path: primaryNode.path, message: "replicas need a postgres:// primary")
        }
        return (primary, replicas, readYourWrites)
    }

    /// A `sqlite:` URL with a relative path made absolute against `base` (the configuration file's
    /// folder); any other URL, or no base, as it is.
    static func sqlitePath(_ url: String, relativeTo base: String?) -> String {
        guard let base, case .sqliteFile(let path) = try? DatabaseURL(parsing: url), !path.hasPrefix("/") else { return url }
        return "sqlite:" + absolutePath(path, relativeTo: base)
    }

    /// Checks `raw` with Storage's ``DatabaseURL`` parser, the one that opens it.
    static func databaseURL(_ raw: String, path: String) throws(ConfigurationError) -> String {
        do {
            _ = try DatabaseURL(parsing: raw)
        } catch {
            throw ConfigurationError(path: path, message: "expected sqlite:PATH or postgres://… (got '\(raw)')")
        }
        return raw
    }
}
