#ifndef PARLEY_CSQLITE_SHIM_H
#define PARLEY_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import. */
static inline sqlite3_destructor_type parley_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/* sqlite3_config is variadic, which Swift cannot call. Turns SQLite's memory statistics off:
   with them on, every allocation and free takes a process-wide mutex to count bytes nobody here
   reads. Valid only before SQLite initializes (SQLITE_MISUSE after). */
static inline int parley_sqlite_memory_statistics_off(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

/* Syncs the journal file of the main database (the WAL, in WAL mode) through its VFS: the sync
   `PRAGMA synchronous = FULL` makes at every commit, made after one commit at `NORMAL`, so one
   transaction can be made durable without changing the connection's setting (which SQLite
   refuses inside a transaction). SQLITE_OK when there is no journal file open (in-memory). */
static inline int parley_sqlite_sync_journal(sqlite3 *db) {
    sqlite3_file *journal = 0;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &journal);
    if (rc != SQLITE_OK) return rc;
    if (journal == 0 || journal->pMethods == 0) return SQLITE_OK;
    return journal->pMethods->xSync(journal, SQLITE_SYNC_NORMAL);
}
#endif
