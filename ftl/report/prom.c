/* nbdkit-ftl: what the statistics set and the Prometheus text share
 * (prom.h): finding members of the set, label values and sample values;
 * and the family of the namespaces' statistics, which has a sample per
 * namespace, labelled namespace="NAME":
 *
 *   # HELP nbdkit_ftl_namespace_host_write_bytes_total Bytes written ...
 *   # TYPE nbdkit_ftl_namespace_host_write_bytes_total counter
 *   nbdkit_ftl_namespace_host_write_bytes_total{namespace="a"} 4096
 *   nbdkit_ftl_namespace_host_write_bytes_total{namespace="b"} 0
 *
 * Pure functions of the set; no state.
 */

#include <config.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "metrics.h"
#include "report/prom.h"

size_t
prom_end_of (const struct ftl_stat_set *set, size_t i)
{
  unsigned depth = 0;

  for (size_t j = i; j < set->n; j++) {
    enum ftl_stat_kind k = set->v[j].kind;

    if (k == FTL_STAT_OBJECT || k == FTL_STAT_ARRAY)
      depth++;
    else if (k == FTL_STAT_END)
      depth--;
    if (depth == 0)
      return j;
  }
  return set->n - 1;
}

const struct ftl_stat *
prom_member (const struct ftl_stat_set *set, size_t obj, const char *key)
{
  size_t end = prom_end_of (set, obj);

  for (size_t j = obj + 1; j < end; j = prom_end_of (set, j) + 1)
    if (set->v[j].key && strcmp (set->v[j].key, key) == 0)
      return &set->v[j];
  return NULL;
}

void
prom_label_value (FILE *fp, const char *s)
{
  fputc ('"', fp);
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fprintf (fp, "\\%c", *s);
    else if (*s == '\n')
      fputs ("\\n", fp);
    else
      fputc (*s, fp);
  }
  fputc ('"', fp);
}

void
prom_value (FILE *fp, double v)
{
  if (v == floor (v) && fabs (v) < 1e15)
    fprintf (fp, "%.0f\n", v);
  else
    fprintf (fp, "%.9g\n", v);
}

static bool
prom_described (const struct ftl_stat *v)
{
  return (v->kind == FTL_STAT_NUMBER || v->kind == FTL_STAT_BOOL) &&
    (v->metric.type == FTL_METRIC_GAUGE ||
     v->metric.type == FTL_METRIC_COUNTER);
}

/* Has an element before elem (from first) a described member key? */
static bool
seen_before (const struct ftl_stat_set *set, size_t first, size_t elem,
             const char *key)
{
  for (size_t e = first; e < elem; e = prom_end_of (set, e) + 1) {
    const struct ftl_stat *m = prom_member (set, e, key);
    if (m && prom_described (m))
      return true;
  }
  return false;
}

/* The samples of one member (described by m) of every element. */
static void
prom_ns_family (const struct ftl_stat_set *set, size_t arr,
                const struct ftl_stat *m, FILE *fp)
{
  size_t end = prom_end_of (set, arr);

  fprintf (fp, "# HELP nbdkit_ftl_%s %s\n# TYPE nbdkit_ftl_%s %s\n",
           m->metric.name, m->metric.help, m->metric.name,
           m->metric.type == FTL_METRIC_COUNTER ? "counter" : "gauge");
  for (size_t e = arr + 1; e < end; e = prom_end_of (set, e) + 1) {
    const struct ftl_stat *v = prom_member (set, e, m->key);
    const struct ftl_stat *name = prom_member (set, e, "name");

    if (v == NULL || !prom_described (v))
      continue;
    fprintf (fp, "nbdkit_ftl_%s{namespace=", m->metric.name);
    prom_label_value (fp, name && name->kind == FTL_STAT_STRING
                      ? name->str : "");
    fputs ("} ", fp);
    prom_value (fp, v->num * v->metric.scale);
  }
}

void
prom_namespaces (const struct ftl_stat_set *set, size_t arr, FILE *fp)
{
  size_t end = prom_end_of (set, arr);

  /* Each described member, in the order first met. */
  for (size_t e = arr + 1; e < end; e = prom_end_of (set, e) + 1) {
    size_t eend = prom_end_of (set, e);
    for (size_t j = e + 1; j < eend; j = prom_end_of (set, j) + 1) {
      const struct ftl_stat *m = &set->v[j];
      if (m->key && prom_described (m) &&
          !seen_before (set, arr + 1, e, m->key))
        prom_ns_family (set, arr, m, fp);
    }
  }
}
