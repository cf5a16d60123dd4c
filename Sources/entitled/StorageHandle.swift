import EntitledServer
import Foundation

/// The storage the server runs on, as far as `serve` needs it: open, probe, close.
final class StorageHandle: ReadinessProbe {
    let url: String

    private init(url: String) { self.url = url }

    static func open(url: String) async throws -> StorageHandle {
        if url.hasPrefix("sqlite:") {
            let path = String(url.dropFirst("sqlite:".count))
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw RuntimeError("cannot create the database folder '\(folder)'")
            }
        }
        return StorageHandle(url: url)
    }

    func checkReady() async throws {}

    func close() async {}
}
