#ifndef PARLEY_STORE_CIPHER_H
#define PARLEY_STORE_CIPHER_H

/* Page-level encryption of an SQLite database through a VFS (docs/DESIGN.md §5.1).

   The VFS wraps another one (the default, or a named one such as a test's fault layer) and
   encrypts every page of the main database file and of its WAL with XChaCha20-Poly1305 under one
   32-byte key. Each page keeps its nonce (24 bytes) and tag (16 bytes) in the page's reserved
   bytes at its end (PARLEY_CIPHER_RESERVED_BYTES, set with SQLITE_FCNTL_RESERVE_BYTES before the
   first page is written); the associated data is the file's kind and the page's byte offset, so
   a page moved to another place does not verify. The first 100 bytes of page 1 (SQLite's file
   header: sizes and counters, no content) stay readable, since SQLite reads them before it
   knows the page size, and are authenticated with the rest of page 1.

   A page that does not verify reads as an I/O error (SQLITE_IOERR_DATA) in the database file; in
   the WAL it reads as zeros, which SQLite's frame checksums then reject as the end of the log
   (a frame torn by a power cut). Rollback journals and temporary files pass through unchanged:
   the store is always in WAL mode and keeps temporary data in memory (`temp_store = MEMORY`). */

#define PARLEY_CIPHER_KEY_BYTES 32
#define PARLEY_CIPHER_RESERVED_BYTES 40

/* Registers (once per key and base) a VFS that encrypts with `key` through the VFS named `base`
   (NULL: the default) and writes its name to `name` (at most `nameSize` bytes with the NUL).
   Never the default VFS. The key is copied into locked memory and kept until
   `parley_cipher_forget_keys`. Returns an SQLite result code. */
int parley_cipher_vfs(const unsigned char *key, const char *base, char *name, int nameSize);

/* Decrypts in place one page of an encrypted database file read at `offset` (the page's byte
   offset; `size` the page size); 0 when it verifies. For tests that look inside the pages. */
int parley_cipher_open_database_page(const unsigned char *key, long long offset, unsigned char *page, int size);

/* Zeroes every key the registered VFSs hold (a wipe): later reads and writes through them fail. */
void parley_cipher_forget_keys(void);

#endif
