#ifndef PARLEY_CSQLITE_SHIM_H
#define PARLEY_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import. */
static inline sqlite3_destructor_type parley_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/* sqlite3_config is variadic, which Swift cannot call. Turns SQLite's memory statistics off:
   with them on, every allocation and free takes a process-wide mutex to count bytes nobody here
   reads. Valid only before SQLite initializes (SQLITE_MISUSE after). */
static inline int parley_sqlite_memory_statistics_off(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
#endif
