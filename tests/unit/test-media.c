/* nbdkit-ftl: unit tests of media.c, the NAND rules over a file.
 *
 * The media layer is driven directly (media_init on a temporary file),
 * without the rest of the FTL.  A byte-for-byte model of the file is
 * kept beside it, so every test can check that the layer wrote exactly
 * what it should where format.h says, and nothing else.
 *
 * The tests that break a NAND rule expect the layer to abort (an
 * assertion), which Check can only observe in fork mode: they are left
 * out, with a message, when CK_FORK=no.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "format/format.h"
#include "nand/media.h"
#include "helpers.h"

/* A small geometry: 512 byte pages, 8 pages per block (one metadata
 * page), 4 blocks, the data area at 4 KiB.
 */
#define PS      512
#define PPB     8
#define BLOCKS  4
#define DATA_OFF 4096

static struct media m;
static int fd = -1;
static char path[256];
static uint8_t *model;          /* expected file contents */
static uint64_t file_bytes;
static uint32_t meta_pages;
static bool split;              /* the layout of version 4 (format.h),
                                 * else the interleaved one of before */

/* The split layout: metadata region at DATA_OFF, data region at a
 * 2 MiB boundary after it.
 */
#define SPLIT_DATA_OFF ((uint64_t) FTL_DATA_ALIGN)

/* Counting I/O hooks: every access must go through struct ftl_io. */
static struct {
  unsigned pwrites, preads, syncs;
  int fail_pwrite_at;           /* 1-based index of a pwrite to fail */
} calls;

static int
count_pwrite (void *opaque, int fd_, const void *buf, size_t len, off_t off)
{
  calls.pwrites++;
  if (calls.fail_pwrite_at && (int) calls.pwrites == calls.fail_pwrite_at)
    return -EIO;
  return media_default_io.pwrite (opaque, fd_, buf, len, off);
}

static int
count_pread (void *opaque, int fd_, void *buf, size_t len, off_t off)
{
  __atomic_fetch_add (&calls.preads, 1, __ATOMIC_RELAXED); /* threads */
  return media_default_io.pread (opaque, fd_, buf, len, off);
}

static int
count_sync (void *opaque, int fd_)
{
  calls.syncs++;
  return 0;
}

static const struct ftl_io counting_io = {
  .pwrite = count_pwrite, .pread = count_pread, .sync = count_sync,
};

/* File offsets computed from format.h's layouts, independently of the
 * inline helpers in media.h.  block_off is where a block's metadata
 * area starts.
 */
static uint64_t
block_off (uint32_t blk)
{
  if (split)
    return DATA_OFF + (uint64_t) blk * meta_pages * PS;
  return DATA_OFF + (uint64_t) blk * (meta_pages + PPB) * PS;
}

static uint64_t
page_off (uint32_t blk, uint32_t page)
{
  if (split)
    return SPLIT_DATA_OFF + ((uint64_t) blk * PPB + page) * PS;
  return block_off (blk) + (uint64_t) (meta_pages + page) * PS;
}

static uint64_t
oob_off (uint32_t blk, uint32_t page)
{
  return block_off (blk) + FTL_BLKHDR_BYTES + (uint64_t) page * FTL_OOB_BYTES;
}

static void
setup_layout (bool s)
{
  split = s;
  unit_dir_clean ();
  memset (&calls, 0, sizeof calls);
  meta_pages = fmt_meta_pages (PS, PPB);
  file_bytes = split ? page_off (BLOCKS, 0) : block_off (BLOCKS);
  ck_assert (!split || block_off (BLOCKS) <= SPLIT_DATA_OFF);
  unit_path (path, sizeof path, "media.img");
  fd = open (path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (ftruncate (fd, file_bytes), 0);
  model = calloc (1, file_bytes);
  ck_assert_ptr_nonnull (model);
  ck_assert_int_eq (media_init (&m, fd, &counting_io, PS, PPB, BLOCKS,
                                meta_pages, split ? DATA_OFF : 0,
                                split ? SPLIT_DATA_OFF : DATA_OFF), 0);
  ck_assert_uint_eq (media_image_bytes (&m), file_bytes);
}

static void
setup (void)
{
  setup_layout (false);
}

static void
setup_split (void)
{
  setup_layout (true);
}

static void
teardown (void)
{
  media_free (&m);
  free (model);
  model = NULL;
  if (fd >= 0)
    close (fd);
  fd = -1;
}

/* The whole file equals the model. */
static void
check_file (void)
{
  uint8_t *buf = malloc (file_bytes);

  ck_assert_uint_eq (unit_file_size (path), file_bytes);
  unit_read_file (path, buf, file_bytes, 0);
  for (uint64_t i = 0; i < file_bytes; i++)
    if (buf[i] != model[i])
      ck_abort_msg ("file byte %" PRIu64 " is 0x%02x, expected 0x%02x",
                    i, buf[i], model[i]);
  free (buf);
}

/* Deterministic page data and OOB bytes for a (block, page, round). */
static void
make_page (uint8_t *data, uint8_t *oob, uint32_t blk, uint32_t page,
           unsigned round)
{
  uint64_t s = 1 + blk * 1000003ULL + page * 7919ULL + round * 104729ULL;
  for (size_t i = 0; i < PS; i++)
    data[i] = unit_rnd (&s);
  for (size_t i = 0; i < FTL_OOB_BYTES; i++)
    oob[i] = unit_rnd (&s) | 1;       /* never all zero */
}

/* media_program from one buffer of n pages. */
static int
program_buf (struct media *mm, uint32_t blk, uint32_t page, uint32_t n,
             const uint8_t *data, const uint8_t *oob)
{
  const uint8_t *ptrs[MEDIA_IOV_MAX];

  for (uint32_t i = 0; i < n; i++)
    ptrs[i] = data + (size_t) i * mm->page_size;
  return media_program (mm, blk, page, n, ptrs, oob);
}

/* Program n pages at (blk, page) and apply the same to the model. */
static void
program (uint32_t blk, uint32_t page, uint32_t n, unsigned round)
{
  uint8_t data[PPB * PS], oob[PPB * FTL_OOB_BYTES];

  for (uint32_t i = 0; i < n; i++)
    make_page (data + i * PS, oob + i * FTL_OOB_BYTES, blk, page + i, round);
  ck_assert_int_eq (program_buf (&m, blk, page, n, data, oob), 0);
  for (uint32_t i = 0; i < n; i++) {
    memcpy (model + page_off (blk, page + i), data + i * PS, PS);
    memcpy (model + oob_off (blk, page + i), oob + i * FTL_OOB_BYTES,
            FTL_OOB_BYTES);
  }
}

/* media.h's offset helpers agree with format.h's layout. */
START_TEST (test_offsets)
{
  ck_assert_uint_eq (m.block_bytes,
                     (uint64_t) ((split ? 0 : meta_pages) + PPB) * PS);
  ck_assert_uint_eq (media_regions_offset (&m), DATA_OFF);
  for (uint32_t b = 0; b < BLOCKS; b++) {
    uint32_t blk;
    uint64_t in;

    ck_assert_uint_eq (media_meta_offset (&m, b), block_off (b));
    /* media_meta_at finds the area's bytes, and only those. */
    ck_assert (media_meta_at (&m, block_off (b), &blk, &in));
    ck_assert_uint_eq (blk, b);
    ck_assert_uint_eq (in, 0);
    ck_assert (media_meta_at (&m, block_off (b) + meta_pages * PS - 1,
                              &blk, &in));
    ck_assert_uint_eq (blk, b);
    ck_assert_uint_eq (in, meta_pages * PS - 1);
    ck_assert (!media_meta_at (&m, page_off (b, 0), &blk, &in));
    ck_assert (!media_meta_at (&m, page_off (b, PPB - 1) + PS - 1, &blk,
                               &in));
    for (uint32_t p = 0; p < PPB; p++) {
      uint32_t ppn = media_ppn (&m, b, p);
      ck_assert_uint_eq (ppn, b * PPB + p);
      ck_assert_uint_eq (media_ppn_block (&m, ppn), b);
      ck_assert_uint_eq (media_ppn_page (&m, ppn), p);
      ck_assert_uint_eq (media_page_offset (&m, ppn), page_off (b, p));
      ck_assert_uint_eq (media_page_offset (&m, ppn) % PS, 0);
    }
  }
}
END_TEST

/* Programming every block in order, one page or several at a time,
 * puts the data and the OOB entries exactly where the layout says and
 * touches nothing else; reads give them back.
 */
START_TEST (test_program_in_order)
{
  uint8_t data[PPB * PS], oob[PPB * FTL_OOB_BYTES];
  uint8_t edata[PS], eoob[FTL_OOB_BYTES];

  for (uint32_t b = 0; b < BLOCKS; b++) {
    /* Runs of 1, 3 and 4 pages. */
    program (b, 0, 1, 0);
    ck_assert_uint_eq (m.wp[b], 1);
    program (b, 1, 3, 0);
    ck_assert_uint_eq (m.wp[b], 4);
    program (b, 4, 4, 0);
    ck_assert_uint_eq (m.wp[b], PPB);
  }
  ck_assert_uint_eq (media_count (&m, MEDIA_PROGRAMS), BLOCKS * PPB);
  ck_assert_uint_eq (calls.pwrites, BLOCKS * 3 * 2);
  check_file ();

  for (uint32_t b = 0; b < BLOCKS; b++) {
    ck_assert_int_eq (media_read (&m, media_ppn (&m, b, 0), PPB, data), 0);
    ck_assert_int_eq (media_read_oob (&m, b, 0, PPB, oob), 0);
    for (uint32_t p = 0; p < PPB; p++) {
      make_page (edata, eoob, b, p, 0);
      ck_assert_mem_eq (data + p * PS, edata, PS);
      ck_assert_mem_eq (oob + p * FTL_OOB_BYTES, eoob, FTL_OOB_BYTES);
    }
    /* A read from the middle of a block. */
    ck_assert_int_eq (media_read (&m, media_ppn (&m, b, 5), 2, data), 0);
    make_page (edata, eoob, b, 6, 0);
    ck_assert_mem_eq (data + PS, edata, PS);
  }
  ck_assert_uint_eq (media_count (&m, MEDIA_READS), BLOCKS * (PPB + 2));

  /* The metadata area: no block header yet (never erased), then the
   * OOB entries.
   */
  uint8_t *meta = malloc ((size_t) meta_pages * PS);
  ck_assert_int_eq (media_read_meta (&m, 2, meta), 0);
  ck_assert_mem_eq (meta, model + block_off (2), (size_t) meta_pages * PS);
  free (meta);
}
END_TEST

/* The counters are kept per thread (util.h): reads from more threads
 * than there are shards, several threads to a shard, all add up.
 */
#define COUNT_THREADS (FTL_SHARDS + 4)
#define COUNT_READS 200

static void *
count_reads (void *arg)
{
  uint8_t buf[PS];

  (void) arg;
  for (int i = 0; i < COUNT_READS; i++)
    if (media_read (&m, media_ppn (&m, i % BLOCKS, 0), 1, buf) < 0)
      return (void *) 1;
  return NULL;
}

START_TEST (test_counters_threads)
{
  pthread_t t[COUNT_THREADS];
  uint64_t before = media_count (&m, MEDIA_READS);
  void *r;

  for (uint32_t b = 0; b < BLOCKS; b++)
    program (b, 0, 1, 0);
  for (int i = 0; i < COUNT_THREADS; i++)
    ck_assert_int_eq (pthread_create (&t[i], NULL, count_reads, NULL), 0);
  for (int i = 0; i < COUNT_THREADS; i++) {
    ck_assert_int_eq (pthread_join (t[i], &r), 0);
    ck_assert_ptr_null (r);
  }
  ck_assert_uint_eq (media_count (&m, MEDIA_READS),
                     before + COUNT_THREADS * COUNT_READS);
  ck_assert_uint_eq (media_count (&m, MEDIA_PROGRAMS), BLOCKS);
}
END_TEST

/* An erase zeros the block's OOB entries, the metadata area between
 * the two header copies, and leaves its data pages as they were (they
 * are meaningful only under an OOB entry): the new header, which
 * records the incremented erase
 * count and the sequence number, goes over the older copy (at the start
 * of the metadata area for odd counts, at its end for even ones) and
 * the newer one stays; the erase generation goes up by one and the
 * program pointer goes back to 0, so page 0 can be programmed again.
 * Other blocks are not touched.
 */
START_TEST (test_erase)
{
  struct ftl_block_header h;
  uint8_t hdr[FTL_BLKHDR_BYTES];

  for (uint32_t b = 0; b < BLOCKS; b++)
    program (b, 0, PPB, 0);
  ck_assert_uint_eq (media_erase_count (&m, 1), 0);
  ck_assert_uint_eq (media_block_gen (&m, 1), 0);

  for (unsigned round = 1; round <= 3; round++) {
    ck_assert_int_eq (media_erase (&m, 1, 1000 + round), 0);
    ck_assert_uint_eq (media_erase_count (&m, 1), round);
    ck_assert_uint_eq (media_block_gen (&m, 1), round);
    ck_assert_uint_eq (m.wp[1], 0);
    ck_assert_uint_eq (media_count (&m, MEDIA_ERASES), round);
    h = (struct ftl_block_header) { .erase_count = round,
                                    .erase_seq = 1000 + round };
    uint64_t meta_bytes = (uint64_t) meta_pages * PS;
    uint64_t copy = round & 1 ? 0 : meta_bytes - FTL_BLKHDR_BYTES;
    ck_assert_uint_eq (media_header_offset (&m, 1, round),
                       block_off (1) + copy);
    memset (model + block_off (1) + FTL_BLKHDR_BYTES, 0,
            meta_bytes - 2 * FTL_BLKHDR_BYTES);
    fmt_blkhdr_encode (&h, model + block_off (1) + copy);
    check_file ();

    /* What is on the file decodes to the right header, and the higher
     * copy wins.
     */
    uint32_t ec = 0;
    uint8_t *meta = malloc ((size_t) meta_pages * PS);
    ck_assert_int_eq (media_read_meta (&m, 1, meta), 0);
    ck_assert_int_eq (media_header_ec (&m, meta, &ec), 1);
    ck_assert_uint_eq (ec, round);
    free (meta);
    unit_read_file (path, hdr, sizeof hdr, block_off (1) + copy);
    ck_assert_int_eq (fmt_blkhdr_decode (hdr, sizeof hdr, &h), FTL_FMT_OK);
    ck_assert_uint_eq (h.erase_count, round);
    ck_assert_uint_eq (h.erase_seq, 1000 + round);

    /* The block is programmable from page 0 again. */
    program (1, 0, 2, round);
    program (1, 2, PPB - 2, round);
    check_file ();
  }
  /* Other blocks kept their counts and generations. */
  for (uint32_t b = 0; b < BLOCKS; b++)
    if (b != 1) {
      ck_assert_uint_eq (media_erase_count (&m, b), 0);
      ck_assert_uint_eq (media_block_gen (&m, b), 0);
    }
  /* Two writes per erase (OOB entries, header), none to data pages. */
  ck_assert_uint_eq (calls.pwrites, 2 * BLOCKS + 3 * (2 + 2 + 2));
}
END_TEST

/* media_set_block (used by recovery) sets the program pointer and the
 * erase count: programming continues there, and the next erase counts
 * on from the count that was set.
 */
START_TEST (test_set_block)
{
  media_set_block (&m, 3, 41, 5);
  ck_assert_uint_eq (media_erase_count (&m, 3), 41);
  ck_assert_uint_eq (m.wp[3], 5);
  program (3, 5, 3, 0);
  ck_assert_uint_eq (m.wp[3], PPB);
  ck_assert_int_eq (media_erase (&m, 3, 9), 0);
  ck_assert_uint_eq (media_erase_count (&m, 3), 42);
  ck_assert_uint_eq (m.wp[3], 0);
}
END_TEST

/* Every access goes through the ftl_io hooks: a program is two writes
 * (data, OOB), an erase two writes (zeros over the OOB entries, the
 * header), a sync a sync.  Raw
 * metadata I/O goes through them too.
 */
START_TEST (test_io_hooks)
{
  uint8_t buf[PS];

  program (0, 0, 2, 0);
  ck_assert_uint_eq (calls.pwrites, 2);
  ck_assert_int_eq (media_erase (&m, 0, 1), 0);
  ck_assert_uint_eq (calls.pwrites, 4);
  ck_assert_int_eq (media_read (&m, media_ppn (&m, 1, 0), 1, buf), 0);
  ck_assert_uint_eq (calls.preads, 1);
  ck_assert_int_eq (media_sync (&m), 0);
  ck_assert_uint_eq (calls.syncs, 1);

  memset (buf, 0x77, sizeof buf);
  ck_assert_int_eq (media_pwrite_raw (&m, buf, sizeof buf, 1024), 0);
  memset (model + 1024, 0x77, sizeof buf);
  ck_assert_uint_eq (calls.pwrites, 5);
  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (media_pread_raw (&m, buf, sizeof buf, 1024), 0);
  ck_assert_uint_eq (buf[0], 0x77);
  ck_assert_uint_eq (buf[PS - 1], 0x77);
  ck_assert_uint_eq (calls.preads, 2);
  ck_assert_uint_eq (media_count (&m, MEDIA_PROGRAMS), 2);
  ck_assert_uint_eq (media_count (&m, MEDIA_READS), 1);
}
END_TEST

/* A read beyond the end of the file (the file is shorter than the
 * geometry says) fails with -EIO rather than returning zeros, whether
 * the read starts beyond the end or crosses it.
 */
START_TEST (test_short_read)
{
  uint8_t buf[2 * PS], oob[FTL_OOB_BYTES];

  program (2, 0, 2, 0);
  /* Cut the file in the middle of page 1 of block 2. */
  ck_assert_int_eq (ftruncate (fd, page_off (2, 1) + PS / 2), 0);
  ck_assert_int_eq (media_read (&m, media_ppn (&m, 2, 0), 1, buf), 0);
  ck_assert_int_eq (media_read (&m, media_ppn (&m, 2, 1), 1, buf), -EIO);
  ck_assert_int_eq (media_read (&m, media_ppn (&m, 2, 0), 2, buf), -EIO);
  ck_assert_int_eq (media_read (&m, media_ppn (&m, 3, 0), 1, buf), -EIO);
  /* Split: the metadata region comes first, and is whole. */
  ck_assert_int_eq (media_read_oob (&m, 3, 0, 1, oob), split ? 0 : -EIO);
  if (split) {
    /* Cut in the metadata area of block 3. */
    ck_assert_int_eq (ftruncate (fd, block_off (3) + FTL_BLKHDR_BYTES), 0);
    ck_assert_int_eq (media_read_oob (&m, 2, 0, 1, oob), 0);
    ck_assert_int_eq (media_read_oob (&m, 3, 0, 1, oob), -EIO);
  }
}
END_TEST

/* media.c: "Even after an error the pages count as programmed: they may
 * hold anything, and NAND does not allow programming them again."  So a
 * failed program must leave the program pointer after the pages, whether
 * the data or the OOB write failed; the FTL's frontier code relies on it
 * (frontier_advance asserts media.wp == frontier wp after a failure, so
 * a pointer left behind would turn an I/O error into an abort).
 */
START_TEST (test_program_error_consumes_pages)
{
  uint8_t data[2 * PS], oob[2 * FTL_OOB_BYTES];

  make_page (data, oob, 0, 0, 0);
  make_page (data + PS, oob + FTL_OOB_BYTES, 0, 1, 0);

  /* The OOB write (the second pwrite) fails. */
  calls.pwrites = 0;
  calls.fail_pwrite_at = 2;
  ck_assert_int_eq (program_buf (&m, 0, 0, 2, data, oob), -EIO);
  ck_assert_uint_eq (m.wp[0], 2);

  /* The data write (the first pwrite) fails. */
  calls.pwrites = 0;
  calls.fail_pwrite_at = 1;
  ck_assert_int_eq (program_buf (&m, 1, 0, 2, data, oob), -EIO);
  ck_assert_msg (m.wp[1] == 2, "after a failed data write the program "
                 "pointer of block 1 is %u, expected 2 (the pages count "
                 "as programmed)", m.wp[1]);
}
END_TEST

/* ---- the NAND rules: breaking one aborts (fork mode only) ---- */

/* No core file for the aborts below. */
static void
no_core (void)
{
  struct rlimit rl = { 0, 0 };
  setrlimit (RLIMIT_CORE, &rl);
  fprintf (stderr, "test-media: an assertion failure is expected here:\n");
}

/* Programming page 1 of a freshly erased block (skipping page 0). */
START_TEST (test_abort_out_of_order)
{
  uint8_t data[PS] = { 1 }, oob[FTL_OOB_BYTES] = { 1 };
  no_core ();
  program_buf (&m, 0, 1, 1, data, oob);
}
END_TEST

/* Programming page 0 twice without an erase. */
START_TEST (test_abort_program_twice)
{
  uint8_t data[PS] = { 1 }, oob[FTL_OOB_BYTES] = { 1 };
  ck_assert_int_eq (program_buf (&m, 0, 0, 1, data, oob), 0);
  no_core ();
  program_buf (&m, 0, 0, 1, data, oob);
}
END_TEST

/* Programming an earlier page after later ones. */
START_TEST (test_abort_backwards)
{
  uint8_t data[3 * PS] = { 1 }, oob[3 * FTL_OOB_BYTES] = { 1 };
  ck_assert_int_eq (program_buf (&m, 2, 0, 3, data, oob), 0);
  no_core ();
  program_buf (&m, 2, 1, 1, data, oob);
}
END_TEST

/* A run of pages that would not fit in the block. */
START_TEST (test_abort_past_block_end)
{
  uint8_t data[2 * PS] = { 1 }, oob[2 * FTL_OOB_BYTES] = { 1 };
  media_set_block (&m, 1, 0, PPB - 1);
  no_core ();
  program_buf (&m, 1, PPB - 1, 2, data, oob);
}
END_TEST

/* A block number beyond the device. */
START_TEST (test_abort_bad_block)
{
  uint8_t data[PS] = { 1 }, oob[FTL_OOB_BYTES] = { 1 };
  no_core ();
  program_buf (&m, BLOCKS, 0, 1, data, oob);
}
END_TEST

/* The hooks of image creation: counted when given; when NULL, the
 * defaults (ftruncate, fsync of the directory) do the work.
 */
static unsigned set_size_calls, sync_dir_calls;
static char sync_dir_path[256];

static int
count_set_size (void *opaque, int fd_, uint64_t size)
{
  set_size_calls++;
  return media_default_io.set_size (opaque, fd_, size);
}

static int
count_sync_dir (void *opaque, const char *p)
{
  sync_dir_calls++;
  snprintf (sync_dir_path, sizeof sync_dir_path, "%s", p);
  return 0;
}

START_TEST (test_create_hooks)
{
  struct ftl_io io = counting_io;
  char missing[300];
  uint8_t buf[PS];

  /* NULL hooks: the defaults.  A grown file reads zeros beyond its old
   * end; the directory of an existing file syncs, that of a missing
   * directory fails with its errno.
   */
  ck_assert_ptr_null (io.set_size);
  ck_assert_int_eq (media_io_set_size (&io, fd, file_bytes + 2 * PS), 0);
  ck_assert_uint_eq (unit_file_size (path), file_bytes + 2 * PS);
  unit_read_file (path, buf, PS, file_bytes + PS);
  for (size_t i = 0; i < PS; i++)
    ck_assert_uint_eq (buf[i], 0);
  ck_assert_int_eq (media_io_sync_dir (&io, path), 0);
  snprintf (missing, sizeof missing, "%s/no/such/dir/x.img", unit_dir);
  ck_assert_int_eq (media_io_sync_dir (&io, missing), -ENOENT);
  ck_assert_int_eq (media_io_sync_dir (&io, "relative.img"), 0);

  /* Hooks given: they are called, with the file's path. */
  io.set_size = count_set_size;
  io.sync_dir = count_sync_dir;
  ck_assert_int_eq (media_io_set_size (&io, fd, file_bytes), 0);
  ck_assert_uint_eq (unit_file_size (path), file_bytes);
  ck_assert_int_eq (media_io_sync_dir (&io, path), 0);
  ck_assert_uint_eq (set_size_calls, 1);
  ck_assert_uint_eq (sync_dir_calls, 1);
  ck_assert_str_eq (sync_dir_path, path);
}
END_TEST

static Suite *
media_suite (void)
{
  Suite *s = suite_create ("media");
  TCase *tc;
  const char *fork_env = getenv ("CK_FORK");

  /* Each layout: the split one of version 4 and the interleaved one
   * of older images.
   */
  for (int i = 0; i < 2; i++) {
    tc = tcase_create (i == 0 ? "split" : "interleaved");
    tcase_set_timeout (tc, 30);
    tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
    tcase_add_checked_fixture (tc, i == 0 ? setup_split : setup, teardown);
    tcase_add_test (tc, test_offsets);
    tcase_add_test (tc, test_program_in_order);
    tcase_add_test (tc, test_erase);
    tcase_add_test (tc, test_counters_threads);
    tcase_add_test (tc, test_set_block);
    tcase_add_test (tc, test_io_hooks);
    tcase_add_test (tc, test_short_read);
    tcase_add_test (tc, test_program_error_consumes_pages);
    tcase_add_test (tc, test_create_hooks);
    suite_add_tcase (s, tc);
  }

  if (fork_env && strcmp (fork_env, "no") == 0)
    printf ("test-media: CK_FORK=no: skipping the NAND rule tests, which "
            "expect an abort and need fork mode\n");
  else {
    tc = tcase_create ("nand-rules");
    tcase_set_timeout (tc, 30);
    tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
    tcase_add_checked_fixture (tc, setup, teardown);
    tcase_add_test_raise_signal (tc, test_abort_out_of_order, SIGABRT);
    tcase_add_test_raise_signal (tc, test_abort_program_twice, SIGABRT);
    tcase_add_test_raise_signal (tc, test_abort_backwards, SIGABRT);
    tcase_add_test_raise_signal (tc, test_abort_past_block_end, SIGABRT);
    tcase_add_test_raise_signal (tc, test_abort_bad_block, SIGABRT);
    suite_add_tcase (s, tc);
  }
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (media_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
