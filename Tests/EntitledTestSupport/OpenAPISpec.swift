import Foundation

/// Reads `paths:` of docs/openapi.yaml by indentation: path keys at two spaces, method keys at four.
/// Enough YAML for our own file; no YAML library.
enum OpenAPISpec {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    static var url: URL {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                return folder.appendingPathComponent("docs/openapi.yaml")
            }
            folder = folder.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "docs/openapi.yaml")
    }

    /// `METHOD /path` for every operation under `paths:`.
    static func operations(in text: String) -> Set<String> {
        var result = Set<String>()
        var inPaths = false
        var currentPath: String?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                continue
            }
            let indent = line.prefix { $0 == " " }.count
            let content = line.trimmingCharacters(in: .whitespaces)
            if indent == 0 {
                inPaths = content == "paths:"
                currentPath = nil
                continue
            }
            guard inPaths, content.hasSuffix(":") else { continue }
            let key = String(content.dropLast()).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
            if indent == 2 {
                currentPath = key
            } else if indent == 4, let path = currentPath, methods.contains(key) {
                result.insert("\(key.uppercased()) \(path)")
            }
        }
        return result
    }
}
