#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a function-like cast macro; Swift cannot import it.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic; Swift cannot call it. Memory statistics take a global mutex on every
// allocation, which every connection of the process then contends on: the store needs none of them.
// Must run before SQLite initializes; later it returns SQLITE_MISUSE and changes nothing.
static inline int CSQLite_disableMemoryStatistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#include <stdint.h>
#include <string.h>

// Copies the header of a WAL index (the database's `-shm` file, mapped at `index`) into `out`, as
// SQLite's own readers do (sqlite.org/walformat.html): the first copy, a full barrier, the second
// copy; a writer writes the second copy first. Returns 1 when both copies agree and the header is
// initialized, 0 while a writer is rewriting it.
static inline int CSQLite_walIndexHeader(const void *index, uint8_t out[48]) {
    const volatile uint8_t *header = (const volatile uint8_t *)index;
    uint8_t second[48];
    for (int i = 0; i < 48; i++) out[i] = header[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < 48; i++) second[i] = header[48 + i];
    return memcmp(out, second, 48) == 0 && out[12] != 0;
}

#endif
