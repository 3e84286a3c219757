/* strdup is POSIX, not ISO C. */
#define _POSIX_C_SOURCE 200809L

#include "PowerCutVFS.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* One file as the page cache holds it: its whole content in memory (test files are small), and
   the range written or cut since the last sync. */
typedef struct Cached {
    char *path;
    unsigned char *data;
    sqlite3_int64 size;
    sqlite3_int64 capacity;
    sqlite3_int64 dirtyFrom; /* [dirtyFrom, dirtyTo): written since the last sync; empty when from >= to */
    sqlite3_int64 dirtyTo;
    int shrank;              /* truncated since the last sync */
    struct Cached *next;
} Cached;

typedef struct Handle {
    sqlite3_file base;
    Cached *cached;          /* NULL: a file passed straight through (temporary files) */
    unsigned long epoch;     /* the power epoch it was opened in; dead once the power was cut */
    sqlite3_file *real;      /* the default VFS's file, right after this struct */
} Handle;

/* One lock for everything: SQLite calls from the writer's thread and the checkpointer's. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Cached *files;
static unsigned long epoch = 1;
static int powerOff;
static long syncs;
static sqlite3_vfs *base;
static sqlite3_vfs layer;
static int registered;

static int dead(const Handle *handle) { return handle->cached != NULL && (powerOff || handle->epoch != epoch); }

static void forget(Cached *cached) {
    free(cached->path);
    free(cached->data);
    free(cached);
}

static Cached *find(const char *path) {
    for (Cached *cached = files; cached; cached = cached->next) {
        if (strcmp(cached->path, path) == 0) return cached;
    }
    return NULL;
}

static int reserve(Cached *cached, sqlite3_int64 size) {
    if (size <= cached->capacity) return SQLITE_OK;
    sqlite3_int64 capacity = cached->capacity ? cached->capacity : 65536;
    while (capacity < size) capacity *= 2;
    unsigned char *data = realloc(cached->data, (size_t)capacity);
    if (!data) return SQLITE_NOMEM;
    memset(data + cached->capacity, 0, (size_t)(capacity - cached->capacity));
    cached->data = data;
    cached->capacity = capacity;
    return SQLITE_OK;
}

static void markDirty(Cached *cached, sqlite3_int64 from, sqlite3_int64 to) {
    if (cached->dirtyFrom >= cached->dirtyTo) {
        cached->dirtyFrom = from;
        cached->dirtyTo = to;
    } else {
        if (from < cached->dirtyFrom) cached->dirtyFrom = from;
        if (to > cached->dirtyTo) cached->dirtyTo = to;
    }
}

/* The file's content as the disk holds it, read through the real file. */
static Cached *load(const char *path, sqlite3_file *real) {
    Cached *cached = calloc(1, sizeof(Cached));
    if (!cached) return NULL;
    cached->path = strdup(path);
    sqlite3_int64 size = 0;
    if (!cached->path || real->pMethods->xFileSize(real, &size) != SQLITE_OK || reserve(cached, size) != SQLITE_OK) {
        forget(cached);
        return NULL;
    }
    if (size > 0 && real->pMethods->xRead(real, cached->data, (int)size, 0) != SQLITE_OK) {
        forget(cached);
        return NULL;
    }
    cached->size = size;
    cached->next = files;
    files = cached;
    return cached;
}

#define REAL(file) (((Handle *)(file))->real)

static int layerClose(sqlite3_file *file) {
    /* Closing flushes nothing: the page cache keeps what was written, as an OS would. */
    return REAL(file)->pMethods->xClose(REAL(file));
}

static int layerRead(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    Handle *handle = (Handle *)file;
    if (!handle->cached) return handle->real->pMethods->xRead(handle->real, buffer, amount, offset);
    pthread_mutex_lock(&lock);
    int rc = SQLITE_OK;
    if (dead(handle)) {
        rc = SQLITE_IOERR_READ;
    } else {
        Cached *cached = handle->cached;
        sqlite3_int64 available = cached->size > offset ? cached->size - offset : 0;
        if (available >= amount) {
            memcpy(buffer, cached->data + offset, (size_t)amount);
        } else {
            if (available > 0) memcpy(buffer, cached->data + offset, (size_t)available);
            memset((unsigned char *)buffer + available, 0, (size_t)(amount - available));
            rc = SQLITE_IOERR_SHORT_READ;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int layerWrite(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    Handle *handle = (Handle *)file;
    if (!handle->cached) return handle->real->pMethods->xWrite(handle->real, buffer, amount, offset);
    pthread_mutex_lock(&lock);
    int rc = SQLITE_IOERR_WRITE;
    if (!dead(handle)) {
        Cached *cached = handle->cached;
        rc = reserve(cached, offset + amount);
        if (rc == SQLITE_OK) {
            memcpy(cached->data + offset, buffer, (size_t)amount);
            if (offset + amount > cached->size) cached->size = offset + amount;
            markDirty(cached, offset, offset + amount);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int layerTruncate(sqlite3_file *file, sqlite3_int64 size) {
    Handle *handle = (Handle *)file;
    if (!handle->cached) return handle->real->pMethods->xTruncate(handle->real, size);
    pthread_mutex_lock(&lock);
    int rc = SQLITE_IOERR_TRUNCATE;
    if (!dead(handle)) {
        Cached *cached = handle->cached;
        rc = reserve(cached, size);
        if (rc == SQLITE_OK) {
            if (size < cached->size) {
                memset(cached->data + size, 0, (size_t)(cached->size - size));
                cached->shrank = 1;
            } else if (size > cached->size) {
                markDirty(cached, cached->size, size);
            }
            cached->size = size;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* What reaches the disk: the dirty range and the length, then the real sync. */
static int layerSync(sqlite3_file *file, int flags) {
    Handle *handle = (Handle *)file;
    if (!handle->cached) return handle->real->pMethods->xSync(handle->real, flags);
    pthread_mutex_lock(&lock);
    int rc = SQLITE_IOERR_FSYNC;
    if (!dead(handle)) {
        Cached *cached = handle->cached;
        sqlite3_file *real = handle->real;
        rc = SQLITE_OK;
        sqlite3_int64 to = cached->dirtyTo < cached->size ? cached->dirtyTo : cached->size;
        if (cached->dirtyFrom < to) {
            rc = real->pMethods->xWrite(real, cached->data + cached->dirtyFrom, (int)(to - cached->dirtyFrom), cached->dirtyFrom);
        }
        sqlite3_int64 realSize = 0;
        if (rc == SQLITE_OK) rc = real->pMethods->xFileSize(real, &realSize);
        if (rc == SQLITE_OK && (cached->shrank || realSize != cached->size)) rc = real->pMethods->xTruncate(real, cached->size);
        if (rc == SQLITE_OK) rc = real->pMethods->xSync(real, flags);
        if (rc == SQLITE_OK) {
            cached->dirtyFrom = cached->dirtyTo = 0;
            cached->shrank = 0;
            syncs += 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int layerFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    Handle *handle = (Handle *)file;
    if (!handle->cached) return handle->real->pMethods->xFileSize(handle->real, size);
    pthread_mutex_lock(&lock);
    int rc = dead(handle) ? SQLITE_IOERR_FSTAT : SQLITE_OK;
    if (rc == SQLITE_OK) *size = handle->cached->size;
    pthread_mutex_unlock(&lock);
    return rc;
}

static int layerLock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }
static int layerUnlock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xUnlock(REAL(file), level); }
static int layerCheckReservedLock(sqlite3_file *file, int *out) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), out);
}

static int layerFileControl(sqlite3_file *file, int op, void *argument) {
    /* A size hint would grow the real file behind the cache's back: the cache grows on write. */
    if (op == SQLITE_FCNTL_SIZE_HINT && ((Handle *)file)->cached) return SQLITE_OK;
    return REAL(file)->pMethods->xFileControl(REAL(file), op, argument);
}

static int layerSectorSize(sqlite3_file *file) { return REAL(file)->pMethods->xSectorSize(REAL(file)); }
static int layerDeviceCharacteristics(sqlite3_file *file) {
    return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}

/* The WAL index (-shm) is shared memory that SQLite rebuilds from the WAL after a crash, so it
   passes through. */
static int layerShmMap(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    return REAL(file)->pMethods->xShmMap(REAL(file), page, size, extend, out);
}
static int layerShmLock(sqlite3_file *file, int offset, int n, int flags) {
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, n, flags);
}
static void layerShmBarrier(sqlite3_file *file) { REAL(file)->pMethods->xShmBarrier(REAL(file)); }
static int layerShmUnmap(sqlite3_file *file, int deleteFlag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), deleteFlag);
}

/* No memory map: every read must come through the cache. */
static int layerFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    (void)file, (void)offset, (void)amount;
    *out = NULL;
    return SQLITE_OK;
}
static int layerUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    (void)file, (void)offset, (void)pointer;
    return SQLITE_OK;
}

static const sqlite3_io_methods methods = {
    3,
    layerClose,
    layerRead,
    layerWrite,
    layerTruncate,
    layerSync,
    layerFileSize,
    layerLock,
    layerUnlock,
    layerCheckReservedLock,
    layerFileControl,
    layerSectorSize,
    layerDeviceCharacteristics,
    layerShmMap,
    layerShmLock,
    layerShmBarrier,
    layerShmUnmap,
    layerFetch,
    layerUnfetch,
};

static int layerOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    Handle *handle = (Handle *)file;
    memset(handle, 0, sizeof(Handle));
    handle->real = (sqlite3_file *)&handle[1];
    int rc = base->xOpen(base, name, handle->real, flags, outFlags);
    if (rc != SQLITE_OK) return rc;
    if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))) {
        pthread_mutex_lock(&lock);
        Cached *cached = find(name);
        if (!cached) cached = load(name, handle->real);
        handle->cached = cached;
        handle->epoch = epoch;
        pthread_mutex_unlock(&lock);
        if (!cached) {
            handle->real->pMethods->xClose(handle->real);
            return SQLITE_CANTOPEN;
        }
    }
    handle->base.pMethods = &methods;
    return SQLITE_OK;
}

static int layerDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    pthread_mutex_lock(&lock);
    if (powerOff) {
        pthread_mutex_unlock(&lock);
        return SQLITE_IOERR_DELETE;
    }
    for (Cached **link = &files; *link; link = &(*link)->next) {
        if (strcmp((*link)->path, name) == 0) {
            Cached *gone = *link;
            *link = gone->next;
            forget(gone);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return base->xDelete(base, name, syncDirectory);
}

static int layerAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return base->xAccess(base, name, flags, out);
}
static int layerFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return base->xFullPathname(base, name, size, out);
}
static void *layerDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return base->xDlOpen(base, name);
}
static void layerDlError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    base->xDlError(base, size, out);
}
static void (*layerDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return base->xDlSym(base, library, symbol);
}
static void layerDlClose(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    base->xDlClose(base, library);
}
static int layerRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return base->xRandomness(base, size, out);
}
static int layerSleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return base->xSleep(base, microseconds);
}
static int layerCurrentTime(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return base->xCurrentTime(base, out);
}
static int layerGetLastError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return base->xGetLastError(base, size, out);
}
static int layerCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return base->xCurrentTimeInt64(base, out);
}

int parley_power_cut_register(const char *name) {
    pthread_mutex_lock(&lock);
    int rc = SQLITE_OK;
    if (!registered) {
        base = sqlite3_vfs_find(NULL);
        if (!base) {
            rc = SQLITE_ERROR;
        } else {
            layer.iVersion = 2;
            layer.szOsFile = (int)sizeof(Handle) + base->szOsFile;
            layer.mxPathname = base->mxPathname;
            layer.zName = strdup(name);
            layer.xOpen = layerOpen;
            layer.xDelete = layerDelete;
            layer.xAccess = layerAccess;
            layer.xFullPathname = layerFullPathname;
            layer.xDlOpen = layerDlOpen;
            layer.xDlError = layerDlError;
            layer.xDlSym = layerDlSym;
            layer.xDlClose = layerDlClose;
            layer.xRandomness = layerRandomness;
            layer.xSleep = layerSleep;
            layer.xCurrentTime = layerCurrentTime;
            layer.xGetLastError = layerGetLastError;
            layer.xCurrentTimeInt64 = layerCurrentTimeInt64;
            rc = sqlite3_vfs_register(&layer, 0);
            registered = rc == SQLITE_OK;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void parley_power_cut(void) {
    pthread_mutex_lock(&lock);
    powerOff = 1;
    epoch += 1;
    while (files) {
        Cached *gone = files;
        files = gone->next;
        forget(gone);
    }
    pthread_mutex_unlock(&lock);
}

void parley_power_restore(void) {
    pthread_mutex_lock(&lock);
    powerOff = 0;
    pthread_mutex_unlock(&lock);
}

long parley_power_cut_syncs(void) {
    pthread_mutex_lock(&lock);
    long count = syncs;
    pthread_mutex_unlock(&lock);
    return count;
}
