#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H

#include <zlib.h>

// deflateInit2 and inflateInit2 are function-like macros (they pass zlib's version and the size of
// z_stream, so a header/library mismatch is caught); Swift cannot import them.
static inline int CZlib_deflateInit2(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int CZlib_inflateInit2(z_streamp stream, int windowBits) { return inflateInit2(stream, windowBits); }

#endif
