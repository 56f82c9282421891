#ifndef CLZ4_SHIM_H
#define CLZ4_SHIM_H

// liblz4 (Debian's liblz4-dev), its block format only, through this prefixed shim.
#include <lz4.h>

/// Decodes one LZ4 block of `sourceSize` bytes into at most `capacity` bytes at `destination`.
/// Returns the number of bytes written, or a negative number when the block is malformed or would
/// write past `capacity` (liblz4's `LZ4_decompress_safe` never reads or writes out of bounds).
static inline int CLZ4_decode_block(const char *source, char *destination, int sourceSize, int capacity)
{
    return LZ4_decompress_safe(source, destination, sourceSize, capacity);
}

/// The most bytes encoding `size` bytes can take.
static inline int CLZ4_bound(int size)
{
    return LZ4_compressBound(size);
}

/// Encodes `sourceSize` bytes as one LZ4 block of at most `capacity` bytes; returns its size (0: it
/// did not fit).
static inline int CLZ4_encode_block(const char *source, char *destination, int sourceSize, int capacity)
{
    return LZ4_compress_default(source, destination, sourceSize, capacity);
}

#endif
