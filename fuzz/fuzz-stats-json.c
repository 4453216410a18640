/* nbdkit-ftl fuzz target: the statistics JSON read back (metrics.c):
 * ftl_stats_parse, then the Prometheus and timeline renderers and
 * ftl_json_compact on what it accepted.
 *
 * Input: any bytes, taken as JSON text.  What the parser accepts
 * renders without error, and its compacted form parses to the same
 * members.
 */

#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "metrics.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct ftl_stat_set set = { 0 }, again = { 0 };
  char err[200], *text, *compact = NULL;
  size_t clen = 0;
  FILE *fp;

  if (size > 65536)
    return -1;
  text = malloc (size + 1);
  if (text == NULL)
    return 0;
  memcpy (text, data, size);
  text[size] = '\0';
  if (ftl_stats_parse (text, size, &set, err, sizeof err) == 0) {
    /* JSON text holds no NUL byte outside a string, and a string no
     * raw control character.
     */
    FUZZ_CHECK (strlen (text) == size);
    fp = fopen ("/dev/null", "w");
    FUZZ_CHECK (fp != NULL);
    FUZZ_CHECK (ftl_render_prometheus (&set, fp) == 0);
    FUZZ_CHECK (ftl_render_timeline_line (&set, &set, text, 1, 1, 1, fp)
                == 0);
    fclose (fp);
    fp = open_memstream (&compact, &clen);
    FUZZ_CHECK (fp != NULL);
    ftl_json_compact (text, fp);
    fclose (fp);
    FUZZ_CHECK (ftl_stats_parse (compact, clen, &again, err, sizeof err)
                == 0);
    FUZZ_CHECK (again.n == set.n);
    for (size_t i = 0; i < set.n; i++)
      FUZZ_CHECK (strcmp (again.v[i].path, set.v[i].path) == 0);
  }
  else
    FUZZ_CHECK (err[0] != '\0');
  ftl_stats_free (&set);
  ftl_stats_free (&again);
  free (compact);
  free (text);
  return 0;
}
