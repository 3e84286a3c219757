#ifndef PARLEY_CSQLITE_SHIM_H
#define PARLEY_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import. */
static inline sqlite3_destructor_type parley_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
