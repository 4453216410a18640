/* nbdkit-ftl: the on-media format.
 *
 * This layer owns every structure stored in the backing file and the
 * only code that turns bytes into structures and back (format.c; the
 * namespace table in nstable.c).  Every structure
 * has a magic, a version, a length (implied by the version where it is
 * fixed) and a checksum; a decoder validates all four and says precisely
 * what is wrong.  All integers are little-endian.  Decoders never trust a
 * length or count from the media without bounding it.
 *
 * Layout of the backing file (version 4):
 *
 *   0          superblock copy A              (FTL_SB_SLOT bytes)
 *   4 KiB      superblock copy B              (FTL_SB_SLOT bytes)
 *   ckpt[0]    checkpoint slot 0              (ckpt_bytes)
 *   ckpt[1]    checkpoint slot 1              (ckpt_bytes)
 *   meta       the metadata areas of erase blocks 0 .. blocks-1, each
 *              meta_pages pages:
 *
 *              +--------------------------+
 *              |  block header  32 bytes  |
 *              |  OOB entry 0   32 bytes  |  (describes data page 0)
 *              |  OOB entry 1   32 bytes  |
 *              |  ...                     |
 *              +--------------------------+
 *
 *   data       the data pages of erase blocks 0 .. blocks-1, each
 *              pages_per_block pages, from the first multiple of
 *              fmt_data_align after the metadata areas
 *
 * The data pages of the whole image are one run, and each block's are
 * aligned to their size (up to 2 MiB), so that the host kernel caches
 * a block's data in large folios: a read of a page then finds it with
 * fewer lookups and a write of a whole block copies into a few folios
 * instead of many.
 *
 * Images created before version 4 interleave the two (meta_offset 0
 * in the superblock): from data_offset on, each erase block is its
 * metadata area followed by its data pages, block_bytes = (meta_pages
 * + pages_per_block) pages.  They keep that layout for good; only the
 * offsets differ (media_page_offset, media_meta_offset).
 *
 * The block header is written when the block is erased and records its
 * erase count.  It has two copies, at the start of the metadata area
 * (odd erase counts) and in its last 32 bytes (even ones); an erase
 * zeros everything else and writes the new header over the older copy,
 * so a crash during an erase never loses the count of the one before.
 * The higher valid copy is the block's header.  OOB ("out of band") entry i describes data page i: what it
 * holds (a logical page, or a page of trim records), its sequence number,
 * the block's erase count and a checksum of the page's data.  Data pages
 * stay aligned to the page size in the file.
 *
 * Superblocks are rewritten only to record clean/dirty state; the two
 * copies alternate and carry a generation, so a torn superblock write
 * leaves the other copy intact.  Checkpoint slots alternate the same way.
 */

#ifndef FTL_FORMAT_H
#define FTL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Version 2: a checkpoint's block table keeps each block's program
 * hour, and its header the media clock and the added P/E cycles (the
 * error model, errmodel.h).  Version 1 images are read as they are
 * (no program hours, a media clock without skew) and become version 2
 * when first opened read-write (the superblock first, so that an older
 * program refuses the image rather than misread a checkpoint).
 */
/* Version 3: erase blocks written in SLC mode (slc.c): their OOB
 * entries carry FTL_OOB_SLC in the kind byte, and a checkpoint's block
 * table FTL_CKPT_BLK_SLC in the state byte.  Version 2 images are read
 * as they are (no block is in SLC mode) and become version 3 when first
 * opened read-write, as version 1 images became version 2.
 */
/* Version 4: the metadata areas and the data pages of the erase blocks
 * are two regions (see the layout above); the superblock grows to
 * FTL_SB_BYTES to record where the metadata region starts.  Version 3
 * images keep their interleaved layout (meta_offset 0) and become
 * version 4 when first opened read-write.
 */
/* Version 5: a checkpoint's map entry holds the PPN inverted (~ppn),
 * so that an unmapped page is zero: the map of a disk that holds
 * little data is mostly zeros, which a checkpoint leaves as holes of
 * the file (ckpt.c), and creating an image writes no map at all.
 * Checkpoints of earlier versions are read as they are (the entry is
 * the PPN, FTL_UNMAPPED all ones); an image becomes version 5 when
 * first opened read-write, and its next checkpoint is written in the
 * new encoding.
 *
 * Also in version 5: the superblock grows to FTL_SB_BYTES to carry flags and
 * the generation of a pinned checkpoint.  FTL_SB_UNSYNCED marks an
 * image that a sync=false session has open: nothing written since that
 * open was synced, so after a crash of the host any of it may be lost
 * or torn, in any order (recovery verifies every mapped page, and
 * never falls back to a checkpoint older than the pinned one, whose
 * slot the session never rewrote).  A checkpoint's map may hold
 * FTL_LOST: a logical page whose data such a crash lost (it reads as
 * an error).  Version 4 images are read as they are (no flags) and
 * become version 5 when first opened read-write, as before; a program
 * that reads up to version 4 refuses a version 5 image ("a newer
 * format"), which is what keeps it from serving an image that needs
 * the verification.
 */
/* Version 6: a paged map (FTL_SB_PAGED, set when the image is made):
 * the map lives in the log as translation pages (FTL_OOB_MAP), each
 * FTL_TP_ENTRIES map entries of a group of logical pages, and a
 * checkpoint of such an image (FTL_CKPT_PAGED) holds the directory of
 * the translation pages in place of the map, and each erase block's
 * count of valid data pages.  An image without the flag keeps the map
 * of version 5 in its checkpoints.  Version 5 images are read as they
 * are and become version 6 when first opened read-write, as before.
 */
/* Version 7: the data checksum in a page's OOB entry may be seeded
 * with what the entry says the page is (its kind and its LPN field:
 * the logical page, the group, or the count of trim records) in place
 * of its PPN (FTL_SB_LPN_SEED, set when the image is made): a copy to
 * another page keeps the checksum, so garbage collection verifies a
 * page once and programs its copy without hashing it again.  An image
 * without the flag keeps PPN seeds.  Version 6 images are read as they
 * are and become version 7 when first opened read-write, as before; a
 * program that reads up to version 6 refuses a version 7 image.
 */
/* Version 8: namespaces (FTL_SB_NAMESPACES, set when the image is made
 * with more than the default one): each superblock slot holds, at
 * FTL_NS_OFFSET, the namespace table that its superblock names by the
 * low 32 bits of the table's checksum (bytes 140 to 143, reserved and
 * zero before).  An image without the flag has one namespace, "", of
 * the whole logical size, as every image before version 8 has.
 * Version 7 images are read as they are and become version 8 when
 * first opened read-write, as before; a program that reads up to
 * version 7 refuses a version 8 image.
 */
#define FTL_FORMAT_VERSION     8

/* The data region starts at a multiple of an erase block's data size,
 * or of this if that is larger (version 4, fmt_data_align).
 */
#define FTL_DATA_ALIGN         (2u << 20)

#define FTL_SB_MAGIC           "NBDKFTL\0"   /* 8 bytes */
#define FTL_SB_SLOT            4096
#define FTL_SB_BYTES           152          /* encoded length, version 5 */
#define FTL_SB_BYTES_V4        136          /* ... version 4 */
#define FTL_SB_BYTES_V1        128          /* ... versions 1 to 3 */

/* The durable-point record: in each superblock slot at this offset
 * (the superblock itself is written in the slot's first sector only).
 */
#define FTL_DURABLE_MAGIC      "FTLDURPT"    /* 8 bytes */
#define FTL_DURABLE_OFFSET     2048
#define FTL_DURABLE_BYTES      64

#define FTL_CKPT_MAGIC         "FTLCKPT\0"   /* 8 bytes */
#define FTL_CKPT_HDR_BYTES     256
#define FTL_CKPT_NCOUNTERS     21
#define FTL_CKPT_MAP_ENTRY_BYTES 4          /* per logical page in the body */
#define FTL_CKPT_BLOCK_BYTES   12           /* per erase block in the body */

#define FTL_BLKHDR_MAGIC       0x4b4c4246u  /* "FBLK" */
#define FTL_BLKHDR_BYTES       32

#define FTL_OOB_MAGIC          0x5047u      /* "GP" */
#define FTL_OOB_BYTES          32

#define FTL_TRIM_MAGIC         0x5254u      /* "TR" */
#define FTL_TRIM_HDR_BYTES     16
#define FTL_TRIM_ENTRY_BYTES   16

/* The map value of an unmapped logical page; logical and physical page
 * numbers stay below FTL_PAGES_LIMIT, so that neither can be mistaken
 * for it.
 */
#define FTL_UNMAPPED           UINT32_MAX
#define FTL_PAGES_LIMIT        (UINT32_MAX - 1)
/* The map value of a logical page whose data is lost (version 5): it
 * reads as an error until it is rewritten or trimmed.  Recovery sets it
 * after a crash of the host during a sync=false session, for a page
 * whose mapped data is gone; it has no physical page.
 */
#define FTL_LOST               FTL_PAGES_LIMIT

/* Superblock. */
enum ftl_sb_state { FTL_SB_DIRTY = 0, FTL_SB_CLEAN = 1 };
/* Superblock flags (version 5). */
#define FTL_SB_UNSYNCED        0x1u  /* a sync=false session has it open */
#define FTL_SB_PAGED           0x2u  /* version 6: the map is paged */
#define FTL_SB_LPN_SEED        0x4u  /* version 7: data checksums seeded
                                      * with the OOB entry's kind and
                                      * LPN field (fmt_page_seed) */
#define FTL_SB_NAMESPACES      0x8u  /* version 8: the slot holds a
                                      * namespace table (ns_check) */
#define FTL_SB_FLAGS_KNOWN     (FTL_SB_UNSYNCED | FTL_SB_PAGED | \
                                FTL_SB_LPN_SEED | FTL_SB_NAMESPACES)

/* A translation page (version 6): the map entries of FTL_TP_ENTRIES
 * consecutive logical pages (a group), 4 bytes each, inverted as in a
 * checkpoint (0: unmapped), then zeros to the end of the page.  Its
 * OOB entry says FTL_OOB_MAP, the group in the lpn field, and in the
 * seq field the sequence number of the checkpoint that wrote it (its
 * version; a copy that GC made keeps it).
 */
#define FTL_TP_SHIFT           10
#define FTL_TP_ENTRIES         (1u << FTL_TP_SHIFT)
#define FTL_TP_BYTES           (FTL_TP_ENTRIES * 4)
/* A directory entry in a paged checkpoint: the translation page's PPN
 * inverted (0: the group has none, all unmapped) and its version.
 */
#define FTL_CKPT_DIR_BYTES     12

struct ftl_superblock {
  uint32_t version;
  uint64_t generation;          /* higher copy wins */
  uint32_t page_size;
  uint32_t pages_per_block;
  uint32_t blocks;
  uint32_t meta_pages;          /* metadata pages of an erase block */
  uint64_t logical_bytes;
  uint64_t data_offset;         /* file offset of the data region (of
                                 * erase block 0 before version 4) */
  uint64_t ckpt_offset[2];
  uint64_t ckpt_bytes;          /* size of one checkpoint slot */
  uint32_t state;               /* enum ftl_sb_state */
  uint32_t op_ppm;              /* over-provisioning, parts per million */
  uint64_t clean_ckpt_gen;      /* when clean: the checkpoint written last */
  uint64_t uuid[2];
  uint64_t created;             /* seconds since the epoch */
  /* Version 4 (0 before, and in images upgraded from before). */
  uint64_t meta_offset;         /* file offset of the metadata region;
                                 * 0: the layout of versions 1 to 3 */
  /* Version 5 (0 before). */
  uint32_t flags;               /* FTL_SB_* flags */
  uint32_t ns_check;            /* version 8, with FTL_SB_NAMESPACES: the
                                 * low 32 bits of the checksum of the
                                 * slot's namespace table (else zero) */
  uint64_t pinned_ckpt_gen;     /* with FTL_SB_UNSYNCED: the checkpoint
                                 * that was durable when the session
                                 * opened; its slot is not rewritten
                                 * until the session closes */
};

/* The namespace table (version 8), in each superblock slot at
 * FTL_NS_OFFSET, between the superblock's sector and the durable-point
 * record:
 *
 *   header   32 bytes: magic "FTLNSTAB", version u32, length u32 (the
 *            header and the entries), checksum u64 (XXH3 of the length
 *            bytes with this field taken as zero), count u32, placement
 *            u32 (FTL_PLACEMENT_*: which namespaces' pages an erase
 *            block may hold; zero, shared, in the tables written before
 *            placement was kept here, where it was a reserved zero)
 *   entry    FTL_NS_ENTRY_BYTES each, count of them, in the order of
 *            the namespaces (the first is the default export): size in
 *            bytes u64, base u64 (its first logical page), flags u32
 *            (zero: kept for placement), name length u32, name
 *            (FTL_NS_NAME_MAX bytes at most, then zeros to 64 bytes)
 *
 * Namespaces are ranges of the one logical page space of the image
 * [base, base + size / page_size): one map, one log, one GC for all.
 * The ranges do not overlap and lie inside the logical size; they need
 * not be in order, nor cover it all: what no namespace holds is free,
 * for a namespace added later (a deleted one is trimmed whole first,
 * and its range becomes free).  Sizes are whole pages, so that no page
 * is shared by two namespaces.  A superblock names its slot's table by
 * ns_check, so that a table torn while both were rewritten is never
 * paired with the other superblock.
 */
#define FTL_NS_MAGIC           "FTLNSTAB"    /* 8 bytes */
#define FTL_NS_OFFSET          512
#define FTL_NS_HDR_BYTES       32
#define FTL_NS_ENTRY_BYTES     88
#define FTL_NS_MAX             16
#define FTL_NS_NAME_MAX        63
#define FTL_NS_MAX_BYTES       (FTL_NS_HDR_BYTES + FTL_NS_MAX * FTL_NS_ENTRY_BYTES)

struct ftl_ns_entry {
  char name[FTL_NS_NAME_MAX + 1];   /* NUL-terminated */
  uint64_t bytes;                   /* a multiple of the page size */
  uint64_t base;                    /* first logical page */
  uint32_t flags;                   /* zero */
};

/* Data placement (the table's placement field): where the host writes
 * and GC's copies of each namespace go (log/alloc.c).  An erase block
 * is the reclaim unit:
 *   SHARED               every namespace's data in the same frontiers
 *                        (a conventional drive);
 *   ISOLATED             frontiers of its own for each namespace, host
 *                        and GC: a block holds the data of one namespace
 *                        only (NVMe FDP's persistently isolated reclaim
 *                        unit handles);
 *   INITIALLY_ISOLATED   host frontiers of its own for each namespace,
 *                        GC's copies mixed (FDP's initially isolated).
 */
enum ftl_placement {
  FTL_PLACEMENT_SHARED = 0,
  FTL_PLACEMENT_ISOLATED = 1,
  FTL_PLACEMENT_INITIALLY_ISOLATED = 2,
};
#define FTL_PLACEMENT__MAX 3

struct ftl_ns_table {
  uint32_t version;
  uint32_t count;                   /* 1 to FTL_NS_MAX */
  uint32_t placement;               /* enum ftl_placement */
  struct ftl_ns_entry ns[FTL_NS_MAX];
};

/* Durable-point record.  Every page of the log whose sequence number is
 * below seq was programmed and synced: after a crash, such a page that
 * fails its checksum is not a write cut short but durable data that
 * was damaged (it reads as an error), while a page at or above seq may
 * be a torn write (recovery drops it).  Written after the sync of a
 * flush or a FUA write, then synced; the two copies (one per superblock
 * slot) alternate by generation, the higher valid one wins.  Images that
 * never recorded one have zeros there: seq 0.  Added within version 1.
 */
struct ftl_durable {
  uint32_t version;
  uint64_t generation;
  uint64_t seq;
  uint64_t uuid[2];             /* the image's (superblock uuid) */
};

/* Checkpoint header (the body follows it in the slot). */
enum ftl_ckpt_counter {
  FTL_CTR_HOST_WRITE, FTL_CTR_HOST_READ, FTL_CTR_HOST_TRIM, FTL_CTR_FLUSH,
  FTL_CTR_PROGRAM, FTL_CTR_MEDIA_READ, FTL_CTR_ERASE, FTL_CTR_GC_COPIED,
  FTL_CTR_GC_RUNS, FTL_CTR_CKPTS, FTL_CTR_GC_BG_RUNS, FTL_CTR_WL_MOVED,
  /* Added within version 1, in header bytes that earlier images left
   * zero (so they read as none counted yet).
   */
  FTL_CTR_POWER_CYCLES, FTL_CTR_UNSAFE_SHUTDOWNS,
  /* The health log's (NVMe's names): completed host read and write
   * commands (zeroes count as writes), the bytes they carried, and
   * the reads that failed with a media error.
   */
  FTL_CTR_HOST_READ_CMDS, FTL_CTR_HOST_WRITE_CMDS,
  FTL_CTR_HOST_READ_BYTES, FTL_CTR_HOST_WRITE_BYTES,
  FTL_CTR_MEDIA_ERRORS,
  /* The error model's (errmodel.h): bits corrected by ECC, read retry
   * steps taken.
   */
  FTL_CTR_CORRECTED_BITS, FTL_CTR_READ_RETRIES,
  FTL_CTR__MAX
};

struct ftl_ckpt_header {
  uint32_t version;
  uint64_t generation;          /* higher slot wins */
  uint64_t seq;                 /* everything below seq is in the snapshot */
  uint64_t body_bytes;
  uint64_t body_checksum;
  uint64_t logical_pages;
  uint32_t blocks;
  uint32_t pages_per_block;
  uint32_t clean;               /* written by a clean shutdown */
  uint64_t counters[FTL_CKPT_NCOUNTERS];
  /* Version 2 (zero in version 1). */
  uint32_t pe_offset;           /* P/E cycles added (ftlctl age --pe) */
  int64_t clock_skew;           /* media clock - wall clock, seconds,
                                 * when the checkpoint was taken */
  /* Version 6, bit 8 of the clean word: the body is a paged one. */
  bool paged;
};

/* Per erase block state in a checkpoint body. */
enum ftl_block_state {
  FTL_BLK_FREE = 0,             /* erased, not yet written */
  FTL_BLK_OPEN = 1,             /* a frontier appends to it */
  FTL_BLK_FULL = 2,             /* closed: only GC touches it */
  FTL_BLK_RETIRED = 3,          /* worn out: never written again */
};

struct ftl_ckpt_block {
  uint32_t erase_count;
  uint32_t write_pointer;       /* pages programmed since the erase */
  uint32_t state;               /* enum ftl_block_state (the low 7 bits
                                 * of the state byte) */
  uint32_t program_hour;        /* version 2, in the state word's upper
                                 * 24 bits: 1 + hours of the media clock
                                 * from the image's creation to the
                                 * block's first program since its
                                 * erase; 0: none, or not known */
  bool slc;                     /* version 3: programmed in SLC mode
                                 * (FTL_CKPT_BLK_SLC in the state byte) */
};
#define FTL_MAX_PROGRAM_HOUR   0xffffffu
#define FTL_CKPT_BLK_SLC       0x80u

/* Block header, at the start of the metadata area. */
struct ftl_block_header {
  uint32_t erase_count;
  uint64_t erase_seq;           /* sequence number when erased */
};

/* OOB entry.  POISON stands for data that was lost: garbage collection
 * found a valid page that failed its checksum (damaged after it was
 * durable) and moved it as this, so that its logical page goes on
 * reading as an error until it is rewritten or trimmed.  Its data page
 * holds zeros.  (Added within version 1.)
 */
enum ftl_oob_kind { FTL_OOB_DATA = 1, FTL_OOB_TRIM = 2, FTL_OOB_POISON = 3,
                    FTL_OOB_MAP = 4 /* version 6: a translation page */ };
/* Version 3: the kind byte's high bit says that the page's block was
 * programmed in SLC mode (every entry of the block carries it).
 */
#define FTL_OOB_SLC 0x80u

struct ftl_oob {
  uint8_t kind;                 /* enum ftl_oob_kind */
  bool slc;                     /* its block is in SLC mode (version 3) */
  uint32_t lpn;                 /* DATA: the logical page */
  uint32_t trim_entries;        /* TRIM: trim records in the page (the
                                 * same field on the media as lpn) */
  uint64_t seq;                 /* DATA: the data's; TRIM: highest entry */
  uint32_t erase_count;         /* erase count of the block */
  uint64_t data_checksum;       /* XXH3 of the page (fmt_page_seed) */
};

/* One trim record: logical pages [lpn, lpn+count) unmapped at seq. */
struct ftl_trim_entry {
  uint32_t lpn;
  uint32_t count;
  uint64_t seq;
};

/* Result of a decode: FTL_FMT_OK or what is wrong. */
enum ftl_fmt_status {
  FTL_FMT_OK = 0,
  FTL_FMT_EMPTY,                /* all zero bytes: never written */
  FTL_FMT_BAD_MAGIC,
  FTL_FMT_BAD_VERSION,          /* newer than this program (version 0,
                                 * which no writer writes, is damage:
                                 * the length or checksum that follows it
                                 * is bad, or else BAD_FIELD) */
  FTL_FMT_BAD_LENGTH,
  FTL_FMT_BAD_CHECKSUM,
  FTL_FMT_BAD_FIELD,            /* a field out of range */
};
extern const char *fmt_status_string (enum ftl_fmt_status s);

/* Checksums (XXH3, from libxxhash). */
extern uint64_t fmt_checksum (const void *data, size_t len, uint64_t seed);

/* The seed of the data checksum of the page at ppn whose OOB entry
 * says kind and field (the LPN field: a data or poison page's logical
 * page, a translation page's group, a trim page's count of records):
 * with FTL_SB_LPN_SEED in the superblock's flags (version 7) kind and
 * field, which a copy of the page keeps; else the PPN.  The two kinds
 * of seed never meet: a PPN is below 2^32.
 */
static inline uint64_t
fmt_page_seed (uint32_t sb_flags, unsigned kind, uint32_t field,
               uint32_t ppn)
{
  if (sb_flags & FTL_SB_LPN_SEED)
    return (UINT64_C (1) << 63) | ((uint64_t) kind << 32) | field;
  return ppn;
}

/* The same for a decoded OOB entry. */
static inline uint64_t
fmt_oob_seed (uint32_t sb_flags, const struct ftl_oob *o, uint32_t ppn)
{
  return fmt_page_seed (sb_flags, o->kind,
                        o->kind == FTL_OOB_TRIM ? o->trim_entries : o->lpn,
                        ppn);
}
/* fmt_checksum of len bytes of data, read only where present says:
 * data[j] lies in piece (base + j) / piece, and a piece that present
 * does not flag is taken as zeros without being read (a sparse buffer
 * whose untouched pages should stay untouched).
 */
extern uint64_t fmt_checksum_sparse (const uint8_t *data, uint64_t len,
                                     uint64_t base, uint64_t piece,
                                     const uint8_t *present);

/* Encoders write exactly the encoded length; decoders read from a buffer
 * of len bytes and fill *out only when they return FTL_FMT_OK.  The
 * superblock decoder checks that the geometry is self-consistent; why a
 * field is bad is written into why (may be NULL).
 */
extern uint32_t fmt_sb_bytes (uint32_t version);
extern void fmt_sb_encode (const struct ftl_superblock *sb, uint8_t *buf);
extern enum ftl_fmt_status fmt_sb_decode (const uint8_t *buf, size_t len,
                                          struct ftl_superblock *out,
                                          char *why, size_t whylen);

/* A name a namespace may have: 1 to FTL_NS_NAME_MAX bytes of
 * A-Z a-z 0-9 . _ - (what a URI's path and a shell take as it is).
 * The implicit namespace of an image without a table is "", which no
 * table holds.
 */
extern bool fmt_ns_name_ok (const char *name, size_t len);
/* The table of an image without one (FTL_SB_NAMESPACES clear): one
 * namespace "" of the whole logical size.
 */
extern void fmt_ns_default (const struct ftl_superblock *sb,
                            struct ftl_ns_table *t);
/* The encoded length of t, and t encoded into buf (that many bytes);
 * fmt_ns_encode returns the low 32 bits of its checksum (the
 * superblock's ns_check).
 */
extern uint32_t fmt_ns_bytes (const struct ftl_ns_table *t);
extern uint32_t fmt_ns_encode (const struct ftl_ns_table *t, uint8_t *buf);
/* Decode the table of a slot whose superblock (already decoded) is sb
 * from len bytes at buf (the slot from FTL_NS_OFFSET on): its checksum
 * must match sb's ns_check, every name be valid and unique, every size
 * whole pages and every range inside sb's logical size and apart from
 * the others.  Why a field is bad goes into why (may be NULL).
 */
extern enum ftl_fmt_status fmt_ns_decode (const uint8_t *buf, size_t len,
                                          const struct ftl_superblock *sb,
                                          struct ftl_ns_table *out,
                                          char *why, size_t whylen);
/* Check a table against a geometry, as fmt_ns_decode does (the
 * creation of an image uses it too): true, or false with why set.
 */
extern bool fmt_ns_check (const struct ftl_ns_table *t, uint32_t page_size,
                          uint64_t logical_bytes, char *why, size_t whylen);

extern void fmt_durable_encode (const struct ftl_durable *d, uint8_t *buf);
extern enum ftl_fmt_status fmt_durable_decode (const uint8_t *buf,
                                               size_t len,
                                               struct ftl_durable *out);

extern void fmt_ckpt_header_encode (const struct ftl_ckpt_header *h,
                                    uint8_t *buf);
extern enum ftl_fmt_status fmt_ckpt_header_decode (const uint8_t *buf,
                                                   size_t len,
                                                   struct ftl_ckpt_header *out);

/* The checkpoint body, after the header in its slot:
 *
 *   map          logical_pages entries of FTL_CKPT_MAP_ENTRY_BYTES: the
 *                PPN of each logical page, or FTL_UNMAPPED; from
 *                version 5 inverted (0: unmapped)
 *   block table  blocks entries of FTL_CKPT_BLOCK_BYTES, one per erase
 *                block (struct ftl_ckpt_block)
 *
 * fmt_ckpt_body_bytes is its length (the header's body_bytes), and
 * fmt_ckpt_block_offset where erase block b's entry starts in it.
 */
extern uint64_t fmt_ckpt_body_bytes (uint64_t logical_pages, uint32_t blocks);
extern uint64_t fmt_ckpt_block_offset (uint64_t logical_pages, uint32_t b);

/* The body of a paged checkpoint (version 6, FTL_CKPT_PAGED):
 *
 *   directory    a FTL_CKPT_DIR_BYTES entry per group of FTL_TP_ENTRIES
 *                logical pages: its translation page (fmt_ckpt_dir_*)
 *   other        the same for the checkpoint in the other slot (the one
 *                recovery falls back to), as GC had moved its pages
 *                when this one was written: a page it names stays
 *                while it is the other slot's (fmt_ckpt_podir_offset)
 *   block table  as above
 *   valid        4 bytes per erase block: its valid data pages
 *   mapped       8 bytes: logical pages with a mapping
 *   map programs 8 bytes: translation pages programmed since the image
 *                was made (in the program count too)
 *
 * (fmt_ckpt_pbody_bytes; the offsets of a block's entry, of its valid
 * count and of the mapped count, which the map programs follow.)
 */
extern uint64_t fmt_map_groups (uint64_t logical_pages);
extern uint64_t fmt_ckpt_pbody_bytes (uint64_t logical_pages,
                                      uint32_t blocks);
extern uint64_t fmt_ckpt_podir_offset (uint64_t logical_pages);
extern uint64_t fmt_ckpt_pblock_offset (uint64_t logical_pages, uint32_t b);
extern uint64_t fmt_ckpt_pvalid_offset (uint64_t logical_pages,
                                        uint32_t blocks, uint32_t b);
extern uint64_t fmt_ckpt_pmapped_offset (uint64_t logical_pages,
                                         uint32_t blocks);
/* The body's length for a header (paged or not). */
extern uint64_t fmt_ckpt_hbody_bytes (const struct ftl_ckpt_header *h);
extern void fmt_ckpt_dir_encode (uint32_t ppn, uint64_t version,
                                 uint8_t *buf);
extern void fmt_ckpt_dir_decode (const uint8_t *buf, uint32_t *ppn,
                                 uint64_t *version);

/* A map entry in this version's encoding; decoded in the encoding of
 * the checkpoint's version.
 */
extern void fmt_ckpt_map_encode (uint32_t ppn, uint8_t *buf);
extern uint32_t fmt_ckpt_map_decode (const uint8_t *buf, uint32_t version);
extern void fmt_ckpt_block_encode (const struct ftl_ckpt_block *b,
                                   uint8_t *buf);
extern void fmt_ckpt_block_decode (const uint8_t *buf,
                                   struct ftl_ckpt_block *out);

/* The checkpoint validity rule, which recovery and ftlctl check apply
 * alike.  A checkpoint slot holds a usable checkpoint when
 *   1. its header decodes (fmt_ckpt_header_decode);
 *   2. the header was written for the superblock's geometry
 *      (fmt_ckpt_header_check);
 *   3. its body matches the header's checksum (fmt_ckpt_body_check);
 *   4. every entry of the body is possible: a map entry is FTL_UNMAPPED
 *      or a physical page of the image (fmt_ckpt_map_check); an erase
 *      block's state is known, its program pointer is within the block,
 *      and a free or retired block has nothing written
 *      (fmt_ckpt_block_check).
 * Recovery loads the newest slot that passes 1 to 3 and falls back to
 * the other when 3 fails (a torn checkpoint write); a body that fails
 * 4 behind a good checksum was written so, and the image is refused.
 * The checks that write why (may be NULL) say what is wrong, without
 * the slot or the erase block, which the caller names.
 */
extern bool fmt_ckpt_header_check (const struct ftl_ckpt_header *h,
                                   const struct ftl_superblock *sb,
                                   char *why, size_t whylen);
extern bool fmt_ckpt_body_check (const struct ftl_ckpt_header *h,
                                 const uint8_t *body);
extern bool fmt_ckpt_map_check (const struct ftl_ckpt_header *h,
                                uint32_t ppn);
extern bool fmt_ckpt_block_check (const struct ftl_ckpt_block *b,
                                  uint32_t pages_per_block,
                                  char *why, size_t whylen);

extern void fmt_blkhdr_encode (const struct ftl_block_header *h,
                               uint8_t *buf);
extern enum ftl_fmt_status fmt_blkhdr_decode (const uint8_t *buf, size_t len,
                                              struct ftl_block_header *out);

extern void fmt_oob_encode (const struct ftl_oob *o, uint8_t *buf);
extern enum ftl_fmt_status fmt_oob_decode (const uint8_t *buf, size_t len,
                                           struct ftl_oob *out);

/* Trim record pages: a 16 byte header (entry count u32, magic u16,
 * version u16, checksum u64 of the entries seeded with the first 8
 * header bytes, so it covers them too) then count entries of 16 bytes.
 * fmt_trim_page_capacity gives how many fit.
 */
extern uint32_t fmt_trim_page_capacity (uint32_t page_size);
extern void fmt_trim_page_encode (const struct ftl_trim_entry *e,
                                  uint32_t count, uint8_t *page,
                                  uint32_t page_size);
extern enum ftl_fmt_status fmt_trim_page_decode (const uint8_t *page,
                                                 uint32_t page_size,
                                                 struct ftl_trim_entry *out,
                                                 uint32_t *countp);

/* Derived geometry. */
extern uint32_t fmt_meta_pages (uint32_t page_size, uint32_t pages_per_block);
extern uint64_t fmt_ckpt_bytes (uint32_t page_size, uint64_t logical_pages,
                                uint32_t blocks);
/* ... of a paged image (FTL_SB_PAGED). */
extern uint64_t fmt_ckpt_pbytes (uint32_t page_size, uint64_t logical_pages,
                                 uint32_t blocks);
/* Place the metadata and data regions of a new image after its
 * checkpoint slots (sets meta_offset and data_offset), and the size of
 * the file an image needs.
 */
extern uint64_t fmt_data_align (uint32_t page_size, uint32_t pages_per_block);
extern void fmt_place_regions (struct ftl_superblock *sb);
extern uint64_t fmt_image_bytes (const struct ftl_superblock *sb);
/* File offsets, in either layout, of erase block b's metadata area and
 * of page p of its data pages (media.h has the same for an open image).
 */
extern uint64_t fmt_meta_area_offset (const struct ftl_superblock *sb,
                                      uint32_t b);
extern uint64_t fmt_data_page_offset (const struct ftl_superblock *sb,
                                      uint32_t b, uint32_t p);

#endif /* FTL_FORMAT_H */
