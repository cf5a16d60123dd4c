internal import CZstd
import Synchronization

/// zstd with a digested dictionary: the ledger's stored JSON (``CompressedText``). The one
/// wrapper of `CZstd`.
///
/// The dictionary is digested once (a `ZSTD_CDict` and a `ZSTD_DDict`, immutable, which zstd lets
/// any number of threads use at once); each call borrows a context from a small pool, so a text of
/// a few hundred bytes costs its own compression and nothing per dictionary byte. Frames carry
/// their content size but no checksum, no dictionary id and no magic number (the row names its
/// dictionary; the four magic bytes are put back to read it). Decompression is bounded: the caller
/// says how many bytes the frame must give, the output buffer is that size, and anything else —
/// more, fewer, bytes after the frame, a damaged frame — is a `CORRUPT` error, never a crash or an
/// unbounded allocation (one-shot decompression writes into that buffer and allocates no window).
final class ZstdDictionary: Sendable {
    private let compression: ZstdHandle
    private let decompression: ZstdHandle
    private let compressors = Mutex<[ZstdHandle]>([])
    private let decompressors = Mutex<[ZstdHandle]>([])

    /// Contexts kept for reuse at most (one a thread that compresses at once; more are freed).
    private static let pooled = 16
    /// zstd's frame magic number, little-endian, which stored frames leave out.
    private static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// `bytes` digested for compression at `level` and for decompression.
    init(_ bytes: [UInt8], level: Int32) throws {
        guard
            !bytes.isEmpty,
            let cdict = bytes.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, level) }),
            let ddict = bytes.withUnsafeBytes({ ZSTD_createDDict($0.baseAddress, $0.count) })
        else { throw StorageError(.internal, "zstd: the dictionary cannot be loaded") }
        compression = ZstdHandle(cdict)
        decompression = ZstdHandle(ddict)
    }

    deinit {
        ZSTD_freeCDict(compression.pointer)
        ZSTD_freeDDict(decompression.pointer)
        for context in compressors.withLock({ $0 }) { ZSTD_freeCCtx(context.pointer) }
        for context in decompressors.withLock({ $0 }) { ZSTD_freeDCtx(context.pointer) }
    }

    /// `text` compressed with the dictionary: a frame without its magic number.
    func compress(_ text: [UInt8]) throws -> [UInt8] {
        let context = try borrowCompressor()
        defer { giveBack(context, to: compressors, free: { ZSTD_freeCCtx($0) }) }
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(text.count))
        let written = text.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                ZSTD_compress2(context.pointer, output.baseAddress, output.count, input.baseAddress, input.count)
            }
        }
        guard ZSTD_isError(written) == 0, written > Self.magic.count, Array(out[..<Self.magic.count]) == Self.magic else {
            throw StorageError(.internal, "zstd: compression failed", detail: Self.errorName(written))
        }
        return Array(out[Self.magic.count..<written])
    }

    /// The `count` bytes `frame` (as ``compress(_:)`` made it) decompresses to.
    /// - Throws: `CORRUPT` unless it is one whole frame giving exactly `count` bytes.
    func decompress(_ frame: ArraySlice<UInt8>, count: Int) throws -> [UInt8] {
        let input = Self.magic + frame
        let size = input.withUnsafeBytes { ZSTD_findFrameCompressedSize($0.baseAddress, $0.count) }
        guard ZSTD_isError(size) == 0, size == input.count else {
            throw CompressedText.corrupt("zstd: not one whole frame (\(Self.errorName(size)))")
        }
        let context = try borrowDecompressor()
        defer { giveBack(context, to: decompressors, free: { ZSTD_freeDCtx($0) }) }
        // One byte more than expected: a frame that would give more is refused, not truncated.
        var out = [UInt8](repeating: 0, count: count + 1)
        let written = input.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                ZSTD_decompress_usingDDict(
                    context.pointer, output.baseAddress, output.count, input.baseAddress, input.count, decompression.pointer)
            }
        }
        guard ZSTD_isError(written) == 0, written == count else {
            throw CompressedText.corrupt("zstd: \(ZSTD_isError(written) != 0 ? Self.errorName(written) : "\(written) bytes, expected \(count)")")
        }
        out.removeLast()
        return out
    }

    private func borrowCompressor() throws -> ZstdHandle {
        if let pooled = compressors.withLock({ $0.popLast() }) { return pooled }
        guard let context = ZSTD_createCCtx() else { throw StorageError(.internal, "zstd: no compression context") }
        // Set once, kept by every compression the context runs (the level is the dictionary's).
        // The frame omits what the row already says: its dictionary and, with no checksum, nothing
        // to verify (signed text is verified by its signatures).
        let settings = [
            ZSTD_CCtx_refCDict(context, compression.pointer),
            ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 0),
            ZSTD_CCtx_setParameter(context, ZSTD_c_dictIDFlag, 0),
            ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1),
        ]
        guard settings.allSatisfy({ ZSTD_isError($0) == 0 }) else {
            ZSTD_freeCCtx(context)
            throw StorageError(.internal, "zstd: compression context cannot be set up")
        }
        return ZstdHandle(context)
    }

    private func borrowDecompressor() throws -> ZstdHandle {
        if let pooled = decompressors.withLock({ $0.popLast() }) { return pooled }
        guard let context = ZSTD_createDCtx() else { throw StorageError(.internal, "zstd: no decompression context") }
        return ZstdHandle(context)
    }

    private func giveBack(_ context: ZstdHandle, to pool: borrowing Mutex<[ZstdHandle]>, free: (OpaquePointer) -> Int) {
        let kept = pool.withLock { pool in
            guard pool.count < Self.pooled else { return false }
            pool.append(context)
            return true
        }
        if !kept { _ = free(context.pointer) }
    }

    private static func errorName(_ code: Int) -> String {
        ZSTD_isError(code) == 0 ? "no error" : String(cString: ZSTD_getErrorName(code))
    }
}

/// A zstd object (a dictionary or a context). Sendable because one thread at a time uses a
/// context (borrowed from a pool under its lock) and dictionaries are read-only once made.
private struct ZstdHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
