#ifndef CZSTD_SHIM_H
#define CZSTD_SHIM_H

// zstd's stable API only (no ZSTD_STATIC_LINKING_ONLY): the server links the system's shared
// library, whose experimental symbols may change between versions.
#include <zstd.h>

#endif
