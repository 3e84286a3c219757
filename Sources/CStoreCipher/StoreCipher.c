#include "StoreCipher.h"

#include <pthread.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define RESERVED PARLEY_CIPHER_RESERVED_BYTES
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES
#define HEADER_BYTES 100
#define WAL_HEADER_BYTES 32
#define WAL_FRAME_HEADER_BYTES 24

typedef struct CipherVfs {
    sqlite3_vfs vfs;
    sqlite3_vfs *under;
    unsigned char *key; /* sodium_malloc'd: locked, guarded */
    int forgotten;
    char name[48];
    struct CipherVfs *next;
} CipherVfs;

enum { PASS = 0, DATABASE = 1, WAL = 2 };

typedef struct CipherFile {
    sqlite3_file base;
    CipherVfs *owner;
    int kind;
    unsigned char *buffer; /* one encrypted page on its way to the disk */
    int bufferSize;
    sqlite3_file *real; /* the wrapped VFS's file, right after this struct */
} CipherFile;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CipherVfs *registered;
static int count;
/* Nonces: 16 random bytes drawn once per process, then a counter: never repeated under one key
   (a fresh prefix each run), and no system call per page. */
static unsigned char noncePrefix[16];
static unsigned long long nonceCounter;

static int isPageSize(int n) { return n >= 512 && n <= 65536 && (n & (n - 1)) == 0; }

static void makeNonce(unsigned char *nonce) {
    unsigned long long n = __atomic_fetch_add(&nonceCounter, 1, __ATOMIC_RELAXED);
    memcpy(nonce, noncePrefix, 16);
    for (int i = 0; i < 8; i++) nonce[16 + i] = (unsigned char)(n >> (8 * i));
}

/* The associated data: the file's kind, the page's offset and, for page 1, its header. */
static size_t associatedData(unsigned char *ad, int kind, sqlite3_int64 offset, const unsigned char *header) {
    ad[0] = kind == DATABASE ? 'D' : 'W';
    for (int i = 0; i < 8; i++) ad[1 + i] = (unsigned char)((unsigned long long)offset >> (8 * i));
    if (header == NULL) return 9;
    memcpy(ad + 9, header, HEADER_BYTES);
    return 9 + HEADER_BYTES;
}

/* Encrypts `page` (size bytes) to `out`. Page 1 of the database keeps its header in clear. */
static int sealPage(CipherVfs *owner, int kind, sqlite3_int64 offset, const unsigned char *page, int size, unsigned char *out) {
    if (owner->forgotten) return SQLITE_IOERR_WRITE;
    int first = kind == DATABASE && offset == 0;
    /* SQLite must leave the reserved bytes to this layer; a page 1 that says otherwise would
       lose its last bytes to the nonce and tag. */
    if (first && page[20] != RESERVED) return SQLITE_IOERR_WRITE;
    int start = first ? HEADER_BYTES : 0;
    int end = size - RESERVED;
    unsigned char ad[9 + HEADER_BYTES];
    size_t adLength = associatedData(ad, kind, offset, first ? page : NULL);
    unsigned char *nonce = out + end;
    unsigned char *tag = out + end + NONCE_BYTES;
    makeNonce(nonce);
    if (first) memcpy(out, page, HEADER_BYTES);
    crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
        out + start, tag, NULL, page + start, (unsigned long long)(end - start), ad, adLength, NULL, nonce, owner->key);
    return SQLITE_OK;
}

/* Decrypts `page` in place; nonzero when it does not verify. */
static int openPageWithKey(const unsigned char *key, int kind, sqlite3_int64 offset, unsigned char *page, int size);

static int openPage(CipherVfs *owner, int kind, sqlite3_int64 offset, unsigned char *page, int size) {
    if (owner->forgotten) return 1;
    return openPageWithKey(owner->key, kind, offset, page, size);
}

int parley_cipher_open_database_page(const unsigned char *key, long long offset, unsigned char *page, int size) {
    if (sodium_init() < 0) return 1;
    return openPageWithKey(key, DATABASE, offset, page, size);
}

static int openPageWithKey(const unsigned char *key, int kind, sqlite3_int64 offset, unsigned char *page, int size) {
    int first = kind == DATABASE && offset == 0;
    int start = first ? HEADER_BYTES : 0;
    int end = size - RESERVED;
    unsigned char ad[9 + HEADER_BYTES];
    size_t adLength = associatedData(ad, kind, offset, first ? page : NULL);
    unsigned char nonce[NONCE_BYTES], tag[TAG_BYTES];
    memcpy(nonce, page + end, NONCE_BYTES);
    memcpy(tag, page + end + NONCE_BYTES, TAG_BYTES);
    if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
            page + start, NULL, page + start, (unsigned long long)(end - start), tag, ad, adLength, nonce, key) != 0) {
        return 1;
    }
    memset(page + end, 0, RESERVED);
    return 0;
}

/* Where the page content of a WAL access lies: the offset of a page (amount = page size), or of
   a whole frame (amount = 24 + page size, as recovery reads); -1 when the access holds none. */
static sqlite3_int64 walPageOffset(int amount, sqlite3_int64 offset, int *pageSize) {
    if (offset < WAL_HEADER_BYTES) return -1;
    if (isPageSize(amount) && (offset - WAL_HEADER_BYTES - WAL_FRAME_HEADER_BYTES) % (amount + WAL_FRAME_HEADER_BYTES) == 0
        && offset >= WAL_HEADER_BYTES + WAL_FRAME_HEADER_BYTES) {
        *pageSize = amount;
        return offset;
    }
    int page = amount - WAL_FRAME_HEADER_BYTES;
    if (isPageSize(page) && (offset - WAL_HEADER_BYTES) % amount == 0) {
        *pageSize = page;
        return offset + WAL_FRAME_HEADER_BYTES;
    }
    return -1;
}

/* MARK: File methods */

static int cipherClose(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    sqlite3_free(f->buffer);
    f->buffer = NULL;
    return rc;
}

static int cipherRead(sqlite3_file *file, void *data, int amount, sqlite3_int64 offset) {
    CipherFile *f = (CipherFile *)file;
    int rc = f->real->pMethods->xRead(f->real, data, amount, offset);
    if (rc != SQLITE_OK || f->kind == PASS) return rc;
    unsigned char *bytes = data;
    if (f->kind == DATABASE) {
        if (!isPageSize(amount) || offset % amount != 0) return SQLITE_OK; /* the header, read alone */
        return openPage(f->owner, DATABASE, offset, bytes, amount) ? SQLITE_IOERR_DATA : SQLITE_OK;
    }
    int pageSize = 0;
    sqlite3_int64 pageOffset = walPageOffset(amount, offset, &pageSize);
    if (pageOffset < 0) return SQLITE_OK;
    unsigned char *page = bytes + (pageOffset - offset);
    /* A torn or foreign frame: zeros fail SQLite's frame checksum, which ends the log there. */
    if (openPage(f->owner, WAL, pageOffset, page, pageSize)) memset(page, 0, (size_t)pageSize);
    return SQLITE_OK;
}

static int cipherWrite(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    CipherFile *f = (CipherFile *)file;
    if (f->kind == PASS) return f->real->pMethods->xWrite(f->real, data, amount, offset);
    int pageSize = amount;
    int isPage;
    if (f->kind == DATABASE) {
        isPage = isPageSize(amount) && offset % amount == 0;
    } else {
        sqlite3_int64 pageOffset = walPageOffset(amount, offset, &pageSize);
        isPage = pageOffset == offset; /* SQLite writes a frame's header and its page apart */
        if (!isPage && amount > WAL_FRAME_HEADER_BYTES && offset >= WAL_HEADER_BYTES) {
            return SQLITE_IOERR_WRITE; /* part of a page: never write content in clear */
        }
    }
    if (!isPage) {
        if (f->kind == DATABASE) return SQLITE_IOERR_WRITE;
        return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
    if (f->bufferSize < amount) {
        sqlite3_free(f->buffer);
        f->buffer = sqlite3_malloc(amount);
        f->bufferSize = f->buffer ? amount : 0;
        if (!f->buffer) return SQLITE_NOMEM;
    }
    int rc = sealPage(f->owner, f->kind, offset, data, amount, f->buffer);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xWrite(f->real, f->buffer, amount, offset);
}

static int cipherTruncate(sqlite3_file *file, sqlite3_int64 size) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xTruncate(f->real, size);
}
static int cipherSync(sqlite3_file *file, int flags) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xSync(f->real, flags);
}
static int cipherFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}
static int cipherLock(sqlite3_file *file, int level) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xLock(f->real, level);
}
static int cipherUnlock(sqlite3_file *file, int level) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xUnlock(f->real, level);
}
static int cipherCheckReservedLock(sqlite3_file *file, int *out) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}
static int cipherFileControl(sqlite3_file *file, int op, void *arg) {
    CipherFile *f = (CipherFile *)file;
    /* Memory-mapped reads would bypass decryption (the methods have no xFetch anyway). */
    if (op == SQLITE_FCNTL_MMAP_SIZE && f->kind != PASS) {
        if (arg) *(sqlite3_int64 *)arg = 0;
        return SQLITE_OK;
    }
    return f->real->pMethods->xFileControl(f->real, op, arg);
}
static int cipherSectorSize(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xSectorSize(f->real);
}
static int cipherDeviceCharacteristics(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}
static int cipherShmMap(sqlite3_file *file, int region, int size, int extend, void volatile **out) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xShmMap(f->real, region, size, extend, out);
}
static int cipherShmLock(sqlite3_file *file, int offset, int n, int flags) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
static void cipherShmBarrier(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    f->real->pMethods->xShmBarrier(f->real);
}
static int cipherShmUnmap(sqlite3_file *file, int deleteFlag) {
    CipherFile *f = (CipherFile *)file;
    return f->real->pMethods->xShmUnmap(f->real, deleteFlag);
}

/* Version 2: shared memory for the WAL index, and no xFetch, so SQLite never maps the file. */
static const sqlite3_io_methods methods = {
    2, cipherClose, cipherRead, cipherWrite, cipherTruncate, cipherSync, cipherFileSize, cipherLock, cipherUnlock,
    cipherCheckReservedLock, cipherFileControl, cipherSectorSize, cipherDeviceCharacteristics,
    cipherShmMap, cipherShmLock, cipherShmBarrier, cipherShmUnmap, NULL, NULL,
};

/* MARK: VFS methods */

static sqlite3_vfs *under(sqlite3_vfs *vfs) { return ((CipherVfs *)vfs)->under; }

static int cipherOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *outFlags) {
    CipherFile *f = (CipherFile *)file;
    memset(f, 0, sizeof(CipherFile));
    f->owner = (CipherVfs *)vfs;
    f->real = (sqlite3_file *)(f + 1);
    f->kind = (flags & SQLITE_OPEN_MAIN_DB) ? DATABASE : (flags & SQLITE_OPEN_WAL) ? WAL : PASS;
    int rc = under(vfs)->xOpen(under(vfs), name, f->real, flags, outFlags);
    f->base.pMethods = f->real->pMethods ? &methods : NULL;
    return rc;
}
static int cipherDelete(sqlite3_vfs *vfs, const char *name, int syncDir) { return under(vfs)->xDelete(under(vfs), name, syncDir); }
static int cipherAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) { return under(vfs)->xAccess(under(vfs), name, flags, out); }
static int cipherFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    return under(vfs)->xFullPathname(under(vfs), name, n, out);
}
static void *cipherDlOpen(sqlite3_vfs *vfs, const char *name) { return under(vfs)->xDlOpen(under(vfs), name); }
static void cipherDlError(sqlite3_vfs *vfs, int n, char *out) { under(vfs)->xDlError(under(vfs), n, out); }
static void (*cipherDlSym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    return under(vfs)->xDlSym(under(vfs), handle, symbol);
}
static void cipherDlClose(sqlite3_vfs *vfs, void *handle) { under(vfs)->xDlClose(under(vfs), handle); }
static int cipherRandomness(sqlite3_vfs *vfs, int n, char *out) { return under(vfs)->xRandomness(under(vfs), n, out); }
static int cipherSleep(sqlite3_vfs *vfs, int micros) { return under(vfs)->xSleep(under(vfs), micros); }
static int cipherCurrentTime(sqlite3_vfs *vfs, double *out) { return under(vfs)->xCurrentTime(under(vfs), out); }
static int cipherGetLastError(sqlite3_vfs *vfs, int n, char *out) {
    return under(vfs)->xGetLastError ? under(vfs)->xGetLastError(under(vfs), n, out) : 0;
}
static int cipherCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    if (under(vfs)->iVersion >= 2 && under(vfs)->xCurrentTimeInt64) return under(vfs)->xCurrentTimeInt64(under(vfs), out);
    double now = 0;
    int rc = under(vfs)->xCurrentTime(under(vfs), &now);
    *out = (sqlite3_int64)(now * 86400000.0);
    return rc;
}

int parley_cipher_vfs(const unsigned char *key, const char *base, char *name, int nameSize) {
    if (sodium_init() < 0) return SQLITE_ERROR;
    sqlite3_vfs *wrapped = sqlite3_vfs_find(base);
    if (wrapped == NULL) return SQLITE_ERROR;
    pthread_mutex_lock(&lock);
    CipherVfs *found = NULL;
    for (CipherVfs *v = registered; v; v = v->next) {
        if (v->under == wrapped && !v->forgotten && sodium_memcmp(v->key, key, PARLEY_CIPHER_KEY_BYTES) == 0) {
            found = v;
            break;
        }
    }
    int rc = SQLITE_OK;
    if (found == NULL) {
        if (count == 0) randombytes_buf(noncePrefix, sizeof noncePrefix);
        found = sqlite3_malloc(sizeof(CipherVfs));
        unsigned char *copy = sodium_malloc(PARLEY_CIPHER_KEY_BYTES);
        if (found == NULL || copy == NULL) {
            sqlite3_free(found);
            if (copy) sodium_free(copy);
            pthread_mutex_unlock(&lock);
            return SQLITE_NOMEM;
        }
        memset(found, 0, sizeof(CipherVfs));
        memcpy(copy, key, PARLEY_CIPHER_KEY_BYTES);
        found->key = copy;
        found->under = wrapped;
        snprintf(found->name, sizeof found->name, "parley-cipher-%d", ++count);
        sqlite3_vfs *v = &found->vfs;
        v->iVersion = 2;
        v->szOsFile = (int)sizeof(CipherFile) + wrapped->szOsFile;
        v->mxPathname = wrapped->mxPathname;
        v->zName = found->name;
        v->xOpen = cipherOpen;
        v->xDelete = cipherDelete;
        v->xAccess = cipherAccess;
        v->xFullPathname = cipherFullPathname;
        v->xDlOpen = cipherDlOpen;
        v->xDlError = cipherDlError;
        v->xDlSym = cipherDlSym;
        v->xDlClose = cipherDlClose;
        v->xRandomness = cipherRandomness;
        v->xSleep = cipherSleep;
        v->xCurrentTime = cipherCurrentTime;
        v->xGetLastError = cipherGetLastError;
        v->xCurrentTimeInt64 = cipherCurrentTimeInt64;
        rc = sqlite3_vfs_register(v, 0);
        if (rc == SQLITE_OK) {
            found->next = registered;
            registered = found;
        } else {
            sodium_free(copy);
            sqlite3_free(found);
            found = NULL;
        }
    }
    if (found) snprintf(name, (size_t)nameSize, "%s", found->name);
    pthread_mutex_unlock(&lock);
    return rc;
}

void parley_cipher_forget_keys(void) {
    pthread_mutex_lock(&lock);
    for (CipherVfs *v = registered; v; v = v->next) {
        sodium_memzero(v->key, PARLEY_CIPHER_KEY_BYTES);
        v->forgotten = 1;
    }
    pthread_mutex_unlock(&lock);
}
