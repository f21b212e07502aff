/* powerfs's parts (docs/CRASH.md): the buffered state of a file, shared by
 * the file system (powerfs.c), its page maps (pagemap.c) and its fault
 * modes (fault.c), which change what a power cut leaves on BACKING. */
#ifndef ZB_POWERFS_H
#define ZB_POWERFS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PAGE 4096

/* A file's pages by page index: open addressing, linear probing. Each
 * page is PAGE bytes owned by the map. */
struct pagemap {
    uint64_t *keys;          /* page index + 1; 0: an empty slot */
    unsigned char **pages;
    size_t cap, count;       /* cap: 0 or a power of two */
};

/* The address of page `page`'s slot, or NULL if the map has no such page. */
unsigned char **pagemap_slot(const struct pagemap *m, uint64_t page);
/* Adds page `page` (not in the map) holding `data`, which the map then
 * owns. 0, or -ENOMEM (data still the caller's). */
int pagemap_put(struct pagemap *m, uint64_t page, unsigned char *data);
/* Takes page `page` out of the map: its data, now the caller's, or NULL
 * if it was not there. */
unsigned char *pagemap_take(struct pagemap *m, uint64_t page);
/* Frees every page at or past index `first` (all of them, and the map's
 * own memory: 0). */
void pagemap_drop_from(struct pagemap *m, uint64_t first);

/* What the torn-op fault keeps of a file's last write (fault.c). */
struct last_write {
    uint64_t seq;            /* its number among all writes; 0: none not yet synced */
    off_t off;
    size_t len, cap;
    unsigned char *data;     /* len bytes, owned */
};

/* The buffered state of one file (one backing inode). Every field below
 * `lock` is read and written under it. */
struct fstate {
    dev_t dev;
    ino_t ino;
    int fd;                  /* backing, O_RDWR when it could be */
    pthread_mutex_t lock;
    off_t size;              /* the file's size as its readers see it */
    off_t floor;             /* backing bytes at or past floor are not the file's
                              * (a truncation not yet synced): they read as 0 */
    off_t synced;            /* the backing file's size */
    struct pagemap dirty;    /* written, not yet fsynced */
    struct pagemap ghost;    /* fsync-eio: written, its fsync failed: cached
                              * (read back) but never to be written, as the
                              * kernel marks such pages clean */
    bool touched;            /* torn-seq wrote to BACKING ahead of an fsync:
                              * the next flush rewrites the whole file's tail */
    struct last_write last;  /* torn-op */
    unsigned long kept, dropped;  /* torn-seq: its writes since its last fsync that survive, and not */
    char *name;              /* the path it was last opened by (a fault's file=) */
    int refs;                /* open handles and calls in flight (under the table's lock) */
    struct fstate *next;     /* the table's chain */
};

/* The BACKING directory, open (O_DIRECTORY); paths below are relative to it. */
extern int rootfd;

/* A path of the mount ("/a/b") as one relative to rootfd ("a/b"; "/": "."). */
const char *rel_path(const char *path);

/* After an unlink (or the last link of an inode going some other way): the
 * state of the inode (dev, ino) goes if nobody holds it and no name is left. */
void state_forget_if_gone(dev_t dev, ino_t ino);

/* The power cut (powerfs --cut, SIGUSR1, a fault's trigger): every later
 * call fails, the loop ends, the main thread drops the buffers (after
 * fault_at_cut) and unmounts. `why` goes to the log. Any thread. */
void power_cut(const char *why);

/* A line in the log (--log), with the time. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pwrite of all n bytes. 0, or -errno. */
int full_pwrite(int fd, const unsigned char *buf, size_t n, off_t off);

/* Calls fn on every state, each under its lock; the table is locked
 * throughout (fn must not open, close or look up a state). */
void each_state(void (*fn)(struct fstate *s, void *arg), void *arg);

/* ---- the fault modes (fault.c) ------------------------------------------ */

/* Parses a fault SPEC (MODE[:VARIANT][,seed=N][,file=SUBSTR], docs/CRASH.md)
 * and, when install is true, puts it in force from now on (the pending
 * metadata of no-dir-sync made durable first). 0; or -1 with why in err. */
int fault_set(const char *spec, bool install, char *err, size_t errlen);

/* Frees every fault set so far (at the end: no call runs). */
void fault_end(void);

/* After a write of buf[0, len) at off to s (under s->lock): torn-op keeps
 * a copy; torn-seq writes it to BACKING now if the draw says it survives. */
void fault_written(struct fstate *s, const void *buf, size_t len, off_t off);

/* After a size change of s to len (under s->lock): torn-seq makes it on
 * BACKING now if the draw says it survives. */
void fault_resized(struct fstate *s, off_t len);

/* At an fsync of s, before its flush (under s->lock): 0 to flush; -EIO
 * when fsync-eio fails this one, its dirty pages then made ghosts. */
int fault_fsync(struct fstate *s);

/* After a successful flush of s (under s->lock): nothing of it is left to tear. */
void fault_flushed(struct fstate *s);

/* No-dir-sync's log of names (create, mknod, mkdir, symlink, link, unlink,
 * rmdir, rename, exchange), each undone at a cut unless its directory was fsynced
 * since. Paths are the mount's ("/a/b"); from is a rename's old name (else
 * NULL), was an rmdir's directory as it was (else NULL). meta_before_remove is called
 * before an unlink or a rename over `path`: it keeps the inode (a link in
 * the stash) so that the name can come back; it returns a stash id (or 0)
 * to hand to meta_done. meta_done is called after the operation succeeded
 * (with ok false after it failed: the stash link goes). Both do nothing
 * unless no-dir-sync is in force. */
unsigned long meta_before_remove(const char *path);
enum meta_op { META_CREATE, META_MKDIR, META_UNLINK, META_RMDIR, META_RENAME, META_EXCHANGE };
struct stat;
void meta_done(enum meta_op op, const char *path, const char *from, const struct stat *was,
               unsigned long stash, bool ok);
/* An fsync of the directory (dev, ino): what was done to its names is durable. */
void meta_dir_synced(dev_t dev, ino_t ino);
/* Everything durable (powerfs --sync, a clean unmount). */
void meta_all_durable(void);
/* True for the stash's own name, which the mount does not show. */
bool meta_hidden(const char *path);

/* At a cut, once no call runs: torn-op writes its prefix of the last write
 * not synced, no-dir-sync undoes what was not made durable. */
void fault_at_cut(void);

/* Frees what the fault keeps of s (its state is going). */
void fault_forget(struct fstate *s);

#endif
