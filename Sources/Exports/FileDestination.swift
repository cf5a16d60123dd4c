import Foundation

/// A `file://` destination: each file is copied beside its final name and renamed into place,
/// so a reader never sees a partial file and a crash leaves at most a hidden temporary one.
public struct FileDestination: ExportSink {
    /// The absolute folder the keys are relative to (created when missing).
    public var directory: String

    public init(directory: String) { self.directory = directory }

    public func store(file: URL, key: String, contentType: String) async throws(ExportError) {
        try ObjectKey.validate(key)
        let target = URL(fileURLWithPath: directory).appendingPathComponent(key)
        let folder = target.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).partial")
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: folder, withIntermediateDirectories: true)
            try manager.copyItem(at: file, to: temporary)
        } catch {
            try? manager.removeItem(at: temporary)
            throw ExportError(.fileSystem, "cannot write \(temporary.path): \(error.localizedDescription)")
        }
        // The copy reaches the disk before it gets its name, so a crash never leaves a short file
        // under the final name.
        let synced = temporary.path.withCString { path -> Bool in
            let descriptor = open(path, O_RDONLY)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            return fsync(descriptor) == 0
        }
        guard synced, rename(temporary.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? manager.removeItem(at: temporary)
            throw ExportError(.fileSystem, "cannot move \(temporary.lastPathComponent) to \(target.path): \(reason)")
        }
    }
}
