/* ftlctl: block I/O traces.  See trace.h. */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <glib.h>

#include "ftlctl.h"
#include "trace.h"

static const char *const format_names[] = {
  [TRACE_AUTO] = "auto", [TRACE_NBDKIT_LOG] = "nbdkit-log",
  [TRACE_BLKPARSE] = "blkparse", [TRACE_MSR] = "msr",
};

const char *
trace_format_name (enum trace_format f)
{
  return format_names[f];
}

int
trace_format_from_name (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (format_names); i++)
    if (strcmp (name, format_names[i]) == 0)
      return i;
  if (strcmp (name, "snia") == 0)
    return TRACE_MSR;
  return -1;
}

const char *
trace_op_name (enum trace_op op)
{
  static const char *const names[] = {
    "read", "write", "trim", "zero", "flush",
  };
  return names[op];
}

const char *
trace_skip_reason (enum trace_skip s)
{
  static const char *const reasons[] = {
    [SKIP_MALFORMED] = "malformed lines",
    [SKIP_FAILED] = "failed when recorded",
    [SKIP_KIND] = "extents and cache requests (change nothing)",
    [SKIP_OTHER_DISK] = "another disk of the trace",
    [SKIP_BEYOND] = "beyond the end of the disk",
    [SKIP_EMPTY] = "zero bytes long",
  };
  return reasons[s];
}

/* The reader's state. */
struct reader {
  struct trace *tr;
  const struct trace_options *o;
  unsigned long lineno;
  unsigned reports;
  bool have_t0;
  bool summary;                 /* blkparse: in the closing summary */
  GHashTable *ids;              /* nbdkit-log: (connection, id) ->
                                 * request index + 1 */
};

/* A malformed line: report it (the first max_reports of them) and
 * count it.  Returns -1 if strict.
 */
static int bad (struct reader *r, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static int
bad (struct reader *r, const char *fs, ...)
{
  va_list ap;

  r->tr->skipped[SKIP_MALFORMED]++;
  if (r->reports < r->o->max_reports || r->o->strict) {
    fflush (stdout);
    fprintf (stderr, "ftlctl: %s:%lu: ", r->tr->path, r->lineno);
    va_start (ap, fs);
    vfprintf (stderr, fs, ap);
    va_end (ap);
    fputc ('\n', stderr);
    r->reports++;
    if (r->reports == r->o->max_reports && !r->o->strict)
      fprintf (stderr, "ftlctl: %s: (further malformed lines are only "
               "counted)\n", r->tr->path);
  }
  return r->o->strict ? -1 : 0;
}

static struct trace_req *
add_req (struct reader *r, double t, enum trace_op op, uint64_t offset,
         uint64_t count, unsigned flags)
{
  struct trace *tr = r->tr;
  struct trace_req *q;

  if (tr->n == tr->cap) {
    tr->cap = tr->cap ? 2 * tr->cap : 4096;
    tr->reqs = g_renew (struct trace_req, tr->reqs, tr->cap);
  }
  if (!r->have_t0) {
    tr->t0 = t;
    r->have_t0 = true;
  }
  q = &tr->reqs[tr->n++];
  q->t = t;                     /* made relative at the end */
  q->op = op;
  q->offset = offset;
  q->count = count;
  q->flags = flags;
  q->lineno = r->lineno > UINT32_MAX ? UINT32_MAX : r->lineno;
  if (count == 0 && op != TRACE_FLUSH) {
    q->flags |= TRACE_SKIP;
    tr->skipped[SKIP_EMPTY]++;
  }
  return q;
}

/* An unsigned number, decimal or 0x hexadecimal, the whole string. */
static bool
number (const char *s, uint64_t *v)
{
  char *end;

  if (!g_ascii_isdigit (s[0]))
    return false;
  errno = 0;
  *v = strtoull (s, &end, 0);
  return errno == 0 && *end == '\0';
}

/* ---- nbdkit's log filter ---- */

/* "YYYY-MM-DD HH:MM:SS.ffffff " at the start of line: Unix seconds,
 * and *rest after it.
 */
static bool
log_time (const char *line, double *t, const char **rest)
{
  struct tm tm = { 0 };
  double sec;
  int n = 0;

  if (sscanf (line, "%4d-%2d-%2d %2d:%2d:%lf %n", &tm.tm_year, &tm.tm_mon,
              &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &sec, &n) != 6 ||
      n == 0)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = 0;
  *t = (double) timegm (&tm) + sec;
  *rest = line + n;
  return true;
}

/* The value of " key=" in s, up to the next space, into buf. */
static bool
log_value (const char *s, const char *key, char *buf, size_t n)
{
  size_t klen = strlen (key);
  const char *p = s;

  while ((p = strstr (p, key)) != NULL) {
    if ((p == s || p[-1] == ' ') && p[klen] == '=') {
      size_t len = strcspn (p + klen + 1, " ");
      if (len == 0 || len >= n)
        return false;
      memcpy (buf, p + klen + 1, len);
      buf[len] = '\0';
      return true;
    }
    p += klen;
  }
  return false;
}

static bool
log_number (const char *s, const char *key, uint64_t *v)
{
  char buf[32];

  return log_value (s, key, buf, sizeof buf) && number (buf, v);
}

static int
read_nbdkit_log (struct reader *r, char *line)
{
  static const struct { const char *name; int op; } kinds[] = {
    { "Read", TRACE_READ }, { "Write", TRACE_WRITE },
    { "Trim", TRACE_TRIM }, { "Zero", TRACE_ZERO },
    { "Flush", TRACE_FLUSH }, { "Extents", -1 }, { "Cache", -1 },
  };
  const char *rest, *word;
  uint64_t conn = 0, id, offset = 0, count = 0, v;
  double t;
  size_t wlen;
  bool completion;
  int op = -2;
  unsigned flags = 0;

  if (!log_time (line, &t, &rest))
    return bad (r, "not a line of nbdkit's log filter "
                "(it begins with a date and time)");
  if (strncmp (rest, "connection=", 11) == 0) {
    char *end;
    conn = strtoull (rest + 11, &end, 10);
    rest = end;
    while (*rest == ' ')
      rest++;
  }
  completion = strncmp (rest, "...", 3) == 0;
  word = completion ? rest + 3 : rest;
  wlen = strcspn (word, " ");
  for (size_t i = 0; i < G_N_ELEMENTS (kinds); i++)
    if (strlen (kinds[i].name) == wlen &&
        strncmp (word, kinds[i].name, wlen) == 0)
      op = kinds[i].op;
  if (op == -2) {               /* Ready, Connect, Preconnect... */
    r->tr->other_lines++;
    return 0;
  }
  if (!log_number (word, "id", &id))
    return bad (r, "%.*s without id=", (int) wlen, word);

  if (completion) {
    char buf[32];
    gpointer idx;
    int64_t key = (int64_t) (conn << 40 ^ id);

    if (!log_value (word, "return", buf, sizeof buf))
      return bad (r, "%.*s completion without return=", (int) wlen, word);
    idx = g_hash_table_lookup (r->ids, &key);
    if (idx && strcmp (buf, "0") != 0) {
      struct trace_req *q = &r->tr->reqs[GPOINTER_TO_SIZE (idx) - 1];
      if (!(q->flags & TRACE_SKIP)) {
        q->flags |= TRACE_SKIP;
        r->tr->skipped[SKIP_FAILED]++;
      }
    }
    if (idx)
      g_hash_table_remove (r->ids, &key);
    r->tr->other_lines++;
    return 0;
  }

  if (op == -1) {               /* extents, cache */
    r->tr->skipped[SKIP_KIND]++;
    return 0;
  }
  if (op != TRACE_FLUSH &&
      (!log_number (word, "offset", &offset) ||
       !log_number (word, "count", &count)))
    return bad (r, "%.*s without offset= and count=", (int) wlen, word);
  if (log_number (word, "fua", &v) && v)
    flags |= TRACE_FUA;
  if (op == TRACE_ZERO && log_number (word, "trim", &v) && v)
    flags |= TRACE_MAY_TRIM;
  add_req (r, t, op, offset, count, flags);
  {
    int64_t *key = g_new (int64_t, 1);
    *key = (int64_t) (conn << 40 ^ id);
    g_hash_table_replace (r->ids, key, GSIZE_TO_POINTER (r->tr->n));
  }
  return 0;
}

/* ---- blkparse ---- */

static int
read_blkparse (struct reader *r, char *line)
{
  char *tok[12];
  unsigned ntok = 0, maj, min;
  char *save = NULL, *p, *end;
  const char *rwbs;
  uint64_t sector = 0, sectors = 0;
  unsigned flags = 0;
  double t;
  int n = 0;

  if (r->summary)
    return 0;
  for (p = strtok_r (line, " \t\r\n", &save); p && ntok < G_N_ELEMENTS (tok);
       p = strtok_r (NULL, " \t\r\n", &save))
    tok[ntok++] = p;
  if (ntok == 0)
    return 0;
  if (strncmp (tok[0], "CPU", 3) == 0 || strcmp (tok[0], "Total") == 0) {
    r->summary = true;          /* blkparse's summary follows */
    return 0;
  }
  if (sscanf (tok[0], "%u,%u%n", &maj, &min, &n) != 2 ||
      tok[0][n] != '\0' || ntok < 7)
    return bad (r, "not a blkparse event (MAJ,MIN CPU SEQ TIME PID "
                "ACTION RWBS ...)");
  if (strcmp (tok[5], (char[]) { r->o->blkparse_action, 0 }) != 0) {
    r->tr->other_lines++;       /* another action of the same request */
    return 0;
  }
  errno = 0;
  t = strtod (tok[3], &end);
  if (errno || *end != '\0')
    return bad (r, "bad time '%s'", tok[3]);
  rwbs = tok[6];
  if (ntok >= 10 && strcmp (tok[8], "+") == 0) {
    if (!number (tok[7], &sector) || !number (tok[9], &sectors))
      return bad (r, "bad sector range '%s + %s'", tok[7], tok[9]);
  }
  else if (ntok >= 8 && tok[7][0] != '[')
    return bad (r, "expected 'SECTOR + SECTORS' after '%s'", rwbs);
  if (sector > UINT64_MAX / 512 || sectors > UINT64_MAX / 512)
    return bad (r, "sector out of range");

  /* RWBS: F first is a preflush, F after the kind is FUA. */
  if (rwbs[0] == 'F')
    add_req (r, t, TRACE_FLUSH, 0, 0, 0);
  if (strchr (rwbs + 1, 'F'))
    flags |= TRACE_FUA;
  if (strchr (rwbs, 'D'))
    add_req (r, t, TRACE_TRIM, sector * 512, sectors * 512, flags);
  else if (strchr (rwbs, 'W'))
    add_req (r, t, TRACE_WRITE, sector * 512, sectors * 512, flags);
  else if (strchr (rwbs, 'R'))
    add_req (r, t, TRACE_READ, sector * 512, sectors * 512, 0);
  else if (rwbs[0] != 'F' && rwbs[0] != 'N')
    return bad (r, "unknown RWBS '%s'", rwbs);
  return 0;
}

/* ---- MSR Cambridge / SNIA ---- */

static int
read_msr (struct reader *r, char *line)
{
  char *f[8];
  unsigned nf = 0;
  char *p = line;
  uint64_t ts, disk, offset, size;
  enum trace_op op;

  line[strcspn (line, "\r\n")] = '\0';
  if (line[0] == '\0')
    return 0;
  while (nf < G_N_ELEMENTS (f)) {
    f[nf++] = p;
    p = strchr (p, ',');
    if (p == NULL)
      break;
    *p++ = '\0';
  }
  if (nf != 7)
    return bad (r, "expected 7 comma-separated fields (Timestamp,Hostname,"
                "DiskNumber,Type,Offset,Size,ResponseTime), found %u", nf);
  if (strcasecmp (f[0], "Timestamp") == 0) {
    r->tr->other_lines++;       /* a header */
    return 0;
  }
  if (!number (f[0], &ts))
    return bad (r, "bad Timestamp '%s'", f[0]);
  if (!number (f[2], &disk))
    return bad (r, "bad DiskNumber '%s'", f[2]);
  if (strcasecmp (f[3], "Read") == 0)
    op = TRACE_READ;
  else if (strcasecmp (f[3], "Write") == 0)
    op = TRACE_WRITE;
  else
    return bad (r, "Type must be Read or Write: '%s'", f[3]);
  if (!number (f[4], &offset))
    return bad (r, "bad Offset '%s'", f[4]);
  if (!number (f[5], &size))
    return bad (r, "bad Size '%s'", f[5]);
  if (r->o->disk >= 0 && disk != (uint64_t) r->o->disk) {
    r->tr->skipped[SKIP_OTHER_DISK]++;
    return 0;
  }
  /* Windows filetime: 100 ns units since 1601-01-01. */
  add_req (r, ts / 1e7 - 11644473600.0, op, offset, size, 0);
  return 0;
}

/* ---- the file ---- */

static enum trace_format
detect (const char *line)
{
  const char *rest;
  unsigned maj, min;
  double t;
  int n = 0;

  if (log_time (line, &t, &rest))
    return TRACE_NBDKIT_LOG;
  if (sscanf (line, " %u,%u%n", &maj, &min, &n) == 2 &&
      (line[n] == ' ' || line[n] == '\t'))
    return TRACE_BLKPARSE;
  n = 0;
  for (const char *p = line; *p; p++)
    n += *p == ',';
  if (n == 6)
    return TRACE_MSR;
  return TRACE_AUTO;
}

int
trace_read (const char *path, const struct trace_options *o,
            struct trace *tr)
{
  struct reader r = { .tr = tr, .o = o };
  FILE *fp;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int ret = 0;

  memset (tr, 0, sizeof *tr);
  tr->path = path;
  tr->format = o->format;
  fp = fopen (path, "r");
  if (fp == NULL) {
    ftlctl_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  r.ids = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  while ((len = getline (&line, &cap, fp)) != -1) {
    r.lineno++;
    if (strspn (line, " \t\r\n") == (size_t) len)
      continue;
    if (strlen (line) != (size_t) len) {
      if ((ret = bad (&r, "a NUL byte: not a text trace")) == -1)
        break;
      continue;
    }
    if (tr->format == TRACE_AUTO) {
      tr->format = detect (line);
      if (tr->format == TRACE_AUTO) {
        ftlctl_error ("%s:%lu: cannot tell the trace format from this "
                      "line; give --format (nbdkit-log, blkparse or msr)",
                      path, r.lineno);
        ret = -1;
        break;
      }
    }
    line[strcspn (line, "\n")] = '\0';
    switch (tr->format) {
    case TRACE_NBDKIT_LOG: ret = read_nbdkit_log (&r, line); break;
    case TRACE_BLKPARSE:   ret = read_blkparse (&r, line); break;
    case TRACE_MSR:        ret = read_msr (&r, line); break;
    case TRACE_AUTO:       abort ();
    }
    if (ret == -1)
      break;
  }
  if (ret == 0 && ferror (fp)) {
    ftlctl_error ("%s: %s", path, strerror (errno));
    ret = -1;
  }
  free (line);
  fclose (fp);
  g_hash_table_destroy (r.ids);
  if (ret == -1) {
    trace_free (tr);
    return -1;
  }
  if (tr->format == TRACE_AUTO) {
    ftlctl_error ("%s: no requests in the trace", path);
    trace_free (tr);
    return -1;
  }
  for (size_t i = 0; i < tr->n; i++) {
    struct trace_req *q = &tr->reqs[i];
    q->t -= tr->t0;
    if (q->t < 0)
      q->t = 0;                 /* a clock step back in the trace */
    if (!(q->flags & TRACE_SKIP) && q->op != TRACE_FLUSH &&
        q->offset + q->count > tr->end && q->offset + q->count >= q->offset)
      tr->end = q->offset + q->count;
  }
  return 0;
}

void
trace_free (struct trace *tr)
{
  g_free (tr->reqs);
  tr->reqs = NULL;
  tr->n = tr->cap = 0;
}
