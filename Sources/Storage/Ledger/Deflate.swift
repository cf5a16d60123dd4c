internal import CZlib

/// zlib's raw deflate with a preset dictionary: the ledger's stored JSON (``CompressedText``). The
/// one wrapper of `CZlib`.
///
/// Raw streams (no zlib header or checksum: six bytes a row saved) whose dictionary is named by
/// the row itself. Decompression is bounded: the caller says how many bytes the stream must give,
/// and anything else — more, fewer, a stream that does not end, bytes after its end — is a
/// `CORRUPT` error, never a crash or an unbounded allocation.
enum Deflate {
    /// `text` deflated with `dictionary` (zlib's best compression: the texts are a few hundred
    /// bytes, where the level costs little and every byte counts).
    static func compress(_ text: [UInt8], dictionary: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        // memLevel 8, windowBits -15: a raw stream with the full 32 KiB window (the dictionary
        // and its context sit in it).
        guard CZlib_deflateInit2(&stream, Z_BEST_COMPRESSION, -MAX_WBITS, 8) == Z_OK else {
            throw StorageError(.internal, "zlib: deflateInit2 failed")
        }
        defer { deflateEnd(&stream) }
        if !dictionary.isEmpty {
            let status = dictionary.withUnsafeBufferPointer { deflateSetDictionary(&stream, $0.baseAddress, uInt($0.count)) }
            guard status == Z_OK else { throw StorageError(.internal, "zlib: deflateSetDictionary failed") }
        }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(text.count))))
        let status = finish(&stream, text[...], into: &out) { deflate($0, Z_FINISH) }
        guard status == Z_STREAM_END else { throw StorageError(.internal, "zlib: deflate did not finish (\(status))") }
        out.removeLast(Int(stream.avail_out))
        return out
    }

    /// The `count` bytes `compressed` inflates to with `dictionary`.
    /// - Throws: `CORRUPT` unless the stream ends exactly there, having used all of `compressed`.
    static func decompress(_ compressed: ArraySlice<UInt8>, dictionary: [UInt8], count: Int) throws -> [UInt8] {
        var stream = z_stream()
        guard CZlib_inflateInit2(&stream, -MAX_WBITS) == Z_OK else { throw StorageError(.internal, "zlib: inflateInit2 failed") }
        defer { inflateEnd(&stream) }
        if !dictionary.isEmpty {
            let status = dictionary.withUnsafeBufferPointer { inflateSetDictionary(&stream, $0.baseAddress, uInt($0.count)) }
            guard status == Z_OK else { throw StorageError(.internal, "zlib: inflateSetDictionary failed") }
        }
        // One byte more than expected: a stream that would give more stops there and is refused.
        var out = [UInt8](repeating: 0, count: count + 1)
        let status = finish(&stream, compressed, into: &out) { inflate($0, Z_FINISH) }
        guard status == Z_STREAM_END, stream.avail_in == 0, Int(stream.total_out) == count else {
            throw StorageError(.corrupt, "stored text cannot be decompressed", detail: "zlib status \(status), \(stream.total_out) bytes")
        }
        out.removeLast()
        return out
    }

    /// Runs `step` once over all of `input` into `output` (zlib reads and writes through raw pointers).
    private static func finish(
        _ stream: inout z_stream, _ input: ArraySlice<UInt8>, into output: inout [UInt8], _ step: (z_streamp) -> Int32
    ) -> Int32 {
        input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = output.baseAddress
                stream.avail_out = uInt(output.count)
                return step(&stream)
            }
        }
    }
}
