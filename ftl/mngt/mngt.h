/* nbdkit-ftl: the management layer's internal calls (mngt/). */
#ifndef FTL_MNGT_H
#define FTL_MNGT_H

#ifndef FTL_INTERNAL_H
#error "included by ftl-internal.h, after the handle"
#endif

/* For tests: free the handle without writing anything, as if the
 * process had been killed (open.c).
 */
extern void open_abandon (struct ftl *ftl);

#endif /* FTL_MNGT_H */
