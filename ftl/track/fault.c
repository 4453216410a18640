/* nbdkit-ftl: fault injection.  See fault.h. */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "track/fault.h"
#include "ftl.h"

int
fault_init (struct fault *f, const char *path)
{
  memset (f, 0, sizeof *f);
  pthread_mutex_init (&f->lock, NULL);
  if (path) {
    f->path = strdup (path);
    if (!f->path)
      return -ENOMEM;
    fault_refresh (f);
  }
  return 0;
}

void
fault_free (struct fault *f)
{
  free (f->path);
  f->path = NULL;
  pthread_mutex_destroy (&f->lock);
}

/* Parse the control file (see fault.h); unknown lines are ignored so
 * that a half-written file does no harm.
 */
static void
parse (struct fault *f, FILE *fp)
{
  char line[256];
  bool stall = false;
  uint64_t delay = 0, reply = 0, ns;

  while (fp && fgets (line, sizeof line, fp)) {
    line[strcspn (line, "\r\n")] = '\0';
    if (strcmp (line, "stall") == 0)
      stall = true;
    else if (strncmp (line, "delay ", 6) == 0 &&
             ftl_parse_duration (line + 6, &ns, NULL, 0) == 0)
      delay = ns;
    else if (strncmp (line, "reply-delay ", 12) == 0 &&
             ftl_parse_duration (line + 12, &ns, NULL, 0) == 0)
      reply = ns;
  }
  __atomic_store_n (&f->delay_ns, delay, __ATOMIC_RELAXED);
  __atomic_store_n (&f->reply_delay_ns, reply, __ATOMIC_RELAXED);
  __atomic_store_n (&f->stall, stall, __ATOMIC_RELEASE);
}

void
fault_refresh (struct fault *f)
{
  struct stat st;
  bool present;

  /* Wait for a refresh running in another thread rather than skip
   * ours: a thread that skipped it could act on the state from before
   * the file changed (and, say, sync through a stall just injected).
   */
  if (!f->path)
    return;
  pthread_mutex_lock (&f->lock);
  present = stat (f->path, &st) == 0;
  if (!present) {
    if (f->seen) {
      f->seen = false;
      parse (f, NULL);
    }
  }
  else if (!f->seen || st.st_ino != f->ino || st.st_size != f->size ||
           st.st_mtim.tv_sec != f->mtime.tv_sec ||
           st.st_mtim.tv_nsec != f->mtime.tv_nsec) {
    FILE *fp = fopen (f->path, "re");
    f->seen = true;
    f->ino = st.st_ino;
    f->size = st.st_size;
    f->mtime = st.st_mtim;
    parse (f, fp);
    if (fp)
      fclose (fp);
  }
  pthread_mutex_unlock (&f->lock);
}
