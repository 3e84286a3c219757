#ifndef PARLEY_POWER_CUT_VFS_H
#define PARLEY_POWER_CUT_VFS_H

/* A file layer under SQLite for tests that cut the power (issue 39): it wraps the default VFS
   and models the operating system's page cache. Every write to a database, WAL or journal file
   lands in memory, shared by every handle on that path, and reaches the real file only when
   SQLite syncs it (xSync); `parley_power_cut` forgets everything not synced, as a power loss
   would, and fails every later call on the handles open at that moment, so closing them flushes
   nothing. Reopen the files through the default VFS to see what a machine finds after the cut.

   The model is the strictest reading of a power loss: no unsynced write survives (a real disk
   may keep some of them, in any order; SQLite's recovery copes with those too). Creating,
   deleting and renaming files is passed through: the directory is treated as synced. */

/* Registers the layer under `name` (not as the default). Idempotent; returns an SQLite result code. */
int parley_power_cut_register(const char *name);

/* Cuts the power: unsynced writes are gone and the open handles dead (every call fails with an I/O error). */
void parley_power_cut(void);

/* Turns the power back on for handles opened from now on. */
void parley_power_restore(void);

/* xSync calls that reached the real files since the layer was registered. */
long parley_power_cut_syncs(void);

#endif
