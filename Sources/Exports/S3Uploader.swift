import Foundation

/// An `s3://bucket/prefix` destination: a file up to ``partSize`` goes up in one PutObject, a
/// larger one as a multipart upload read one part at a time (memory stays at one part), aborted
/// when any part fails so the store keeps no orphaned parts.
public struct S3Uploader: ExportSink {
    public var client: S3Client
    /// Prepended to every key: empty or ending in `/`.
    public var prefix: String
    /// The bytes of one part, at least 5 MiB (S3's minimum for every part but the last).
    public var partSize: Int

    public static let minimumPartSize = 5 << 20
    /// S3's limit on parts per upload.
    public static let maximumParts = 10_000

    public init(client: S3Client, prefix: String = "", partSize: Int = 16 << 20) {
        self.client = client
        self.prefix = prefix
        self.partSize = max(partSize, Self.minimumPartSize)
    }

    public func store(file: URL, key: String, contentType: String) async throws(ExportError) {
        let fullKey = prefix + key
        try ObjectKey.validate(fullKey)
        let handle: FileHandle
        let size: UInt64
        do {
            handle = try FileHandle(forReadingFrom: file)
            size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
        } catch {
            throw ExportError(.fileSystem, "cannot read \(file.path): \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        if size <= UInt64(partSize) {
            try await client.putObject(key: fullKey, body: try Self.read(handle, count: Int(size), file: file), contentType: contentType)
            return
        }
        guard size <= UInt64(partSize) * UInt64(Self.maximumParts) else {
            throw ExportError(.invalidRequest, "\(file.lastPathComponent) needs more than \(Self.maximumParts) parts of \(partSize) bytes")
        }
        let uploadId = try await client.createMultipartUpload(key: fullKey, contentType: contentType)
        do {
            var etags: [String] = []
            var remaining = size
            while remaining > 0 {
                let count = Int(min(remaining, UInt64(partSize)))
                let part = try Self.read(handle, count: count, file: file)
                etags.append(try await client.uploadPart(key: fullKey, uploadId: uploadId, number: etags.count + 1, body: part))
                remaining -= UInt64(count)
            }
            try await client.completeMultipartUpload(key: fullKey, uploadId: uploadId, etags: etags)
        } catch {
            // Best effort: the original failure is what the caller needs to see.
            try? await client.abortMultipartUpload(key: fullKey, uploadId: uploadId)
            throw error
        }
    }

    static func read(_ handle: FileHandle, count: Int, file: URL) throws(ExportError) -> [UInt8] {
        do {
            let data = try handle.read(upToCount: count) ?? Data()
            guard data.count == count else { throw ExportError(.fileSystem, "\(file.path) changed while it was uploaded") }
            return [UInt8](data)
        } catch let error as ExportError {
            throw error
        } catch {
            throw ExportError(.fileSystem, "cannot read \(file.path): \(error.localizedDescription)")
        }
    }
}
