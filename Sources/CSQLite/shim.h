#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a function-like cast macro; Swift cannot import it.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic; Swift cannot call it. Memory statistics take a global mutex on every
// allocation, which every connection of the process then contends on: the store needs none of them.
// Must run before SQLite initializes; later it returns SQLITE_MISUSE and changes nothing.
static inline int CSQLite_disableMemoryStatistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#endif
