/* nbdkit-ftl: pieces of the statistics set and of the Prometheus text
 * that metrics.c and prom.c share (report/ only).
 */
#ifndef FTL_REPORT_PROM_H
#define FTL_REPORT_PROM_H

#include <stddef.h>
#include <stdio.h>

#include "metrics.h"

/* The END entry of the object or array at i (i itself for anything
 * else; the last entry if the set is not whole).
 */
extern size_t prom_end_of (const struct ftl_stat_set *set, size_t i);
/* The member key of the object at obj, or NULL. */
extern const struct ftl_stat *prom_member (const struct ftl_stat_set *set,
                                           size_t obj, const char *key);
/* A label value, quoted and escaped as the text format wants. */
extern void prom_label_value (FILE *fp, const char *s);
/* A sample value and its newline: integers exactly, the rest with
 * enough digits.
 */
extern void prom_value (FILE *fp, double v);
/* The array of namespaces at arr (FTL_METRIC_NAMESPACES): a family per
 * described member, a sample per namespace labelled namespace="NAME".
 */
extern void prom_namespaces (const struct ftl_stat_set *set, size_t arr,
                             FILE *fp);

#endif /* FTL_REPORT_PROM_H */
