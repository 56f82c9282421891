import CLZ4

/// Firefox's `mozLz4` framing of its session files: the 8-byte magic `mozLz40\0`, the decoded size
/// as 4 bytes little-endian, then one LZ4 block (decoded by liblz4, never here).
public enum MozLz4 {
    static let magic: [UInt8] = Array("mozLz40\0".utf8)
    static let headerSize = 12

    /// Whether `bytes` start with the magic.
    public static func isFramed(_ bytes: [UInt8]) -> Bool { bytes.count >= magic.count && Array(bytes.prefix(magic.count)) == magic }

    /// The decoded bytes of a framed file.
    /// - Parameter limit: the most decoded bytes accepted; a file claiming more is refused before
    ///   anything is allocated for it.
    /// - Throws: ``FirefoxSessionError`` (bad magic, truncated header or block, a claim over the limit,
    ///   a block that decodes to another size than claimed).
    public static func decode(_ bytes: [UInt8], limit: Int) throws(FirefoxSessionError) -> [UInt8] {
        guard bytes.count >= magic.count else { throw .truncated("the file has \(bytes.count) bytes: not even the 8-byte magic") }
        guard isFramed(bytes) else { throw .badMagic }
        guard bytes.count >= headerSize else { throw .truncated("the header stops after \(bytes.count) bytes; it has 12") }
        let claimed = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
        guard claimed <= limit else { throw .tooLarge(claimed: claimed, limit: limit) }
        // liblz4 counts in `int`: a block or a claim past 2 GiB cannot be decoded by it at all.
        guard claimed <= Int(Int32.max), bytes.count - headerSize <= Int(Int32.max) else {
            throw .tooLarge(claimed: claimed, limit: min(limit, Int(Int32.max)))
        }
        guard bytes.count > headerSize else { throw .truncated("the header claims \(claimed) bytes but no block follows it") }
        // A block can grow at most ~255× when decoded: a claim far beyond that is a lie, refused
        // before its buffer is made.
        guard claimed <= (bytes.count - headerSize) * 255 + 16 else {
            throw .sizeMismatch("the header claims \(claimed) bytes, more than \(bytes.count - headerSize) bytes of block can hold")
        }
        if claimed == 0 { throw .sizeMismatch("the header claims 0 decoded bytes") }
        var output = [UInt8](repeating: 0, count: claimed)
        let written = bytes.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                source.baseAddress!.advanced(by: headerSize).withMemoryRebound(to: CChar.self, capacity: source.count - headerSize) { from in
                    target.baseAddress!.withMemoryRebound(to: CChar.self, capacity: claimed) { to in
                        CLZ4_decode_block(from, to, Int32(source.count - headerSize), Int32(claimed))
                    }
                }
            }
        }
        guard written >= 0 else {
            throw .truncated("the LZ4 block is truncated or malformed (liblz4 stopped at an invalid sequence, or it decodes to more than the \(claimed) bytes claimed)")
        }
        guard written == claimed else { throw .sizeMismatch("the header claims \(claimed) bytes; the block decodes to \(written)") }
        return output
    }

    /// `bytes` framed as Firefox writes a session file (what tests and tools make fixtures with).
    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        precondition(bytes.count < Int(Int32.max), "mozLz4 holds at most 2 GiB")
        let count = bytes.count
        var block = [UInt8](repeating: 0, count: Int(CLZ4_bound(Int32(count))))
        let capacity = block.count
        let size = bytes.withUnsafeBufferPointer { source in
            block.withUnsafeMutableBufferPointer { target in
                source.withMemoryRebound(to: CChar.self) { from in
                    target.withMemoryRebound(to: CChar.self) { to in
                        CLZ4_encode_block(from.baseAddress, to.baseAddress, Int32(count), Int32(capacity))
                    }
                }
            }
        }
        let length = UInt32(count)
        return magic + [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24)]
            + block.prefix(Int(size))
    }
}
