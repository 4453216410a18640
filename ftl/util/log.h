/* nbdkit-ftl: messages, the library's one home for them.
 *
 * Owns nothing but the formatting: a logger is the caller's function,
 * its opaque pointer and the debug categories (FTL_DEBUG_*) it wants.
 * The handle holds one (struct ftl, field logger) and every module
 * writes through log_msg and log_debug; the deadline tracker holds a
 * copy of its own.  A message is formatted into a bounded buffer on
 * the caller's stack (longer ones are cut), so logging takes no lock
 * and may be called from any thread.
 */

#ifndef FTL_UTIL_LOG_H
#define FTL_UTIL_LOG_H

#include "ftl.h"

struct ftl_logger {
  ftl_log_fn fn;                /* NULL: messages are dropped */
  void *opaque;
  unsigned debug;               /* FTL_DEBUG_* categories shown */
  const bool *off;              /* atomic; true: errors are logged as
                                 * warnings (the power was cut); may be
                                 * NULL */
};

extern void ftl_log (const struct ftl_logger *lg, enum ftl_log_level level,
                     const char *fs, ...)
  __attribute__ ((format (printf, 3, 4)));
/* A debug message of category (one FTL_DEBUG_* bit), if it is shown. */
extern void ftl_log_debug (const struct ftl_logger *lg, unsigned category,
                           const char *fs, ...)
  __attribute__ ((format (printf, 3, 4)));

/* The handle's logger: log_msg (ftl, FTL_LOG_WARN, "...", ...). */
#define log_msg(ftl, level, ...) ftl_log (&(ftl)->logger, (level), __VA_ARGS__)
#define log_debug(ftl, category, ...) \
  ftl_log_debug (&(ftl)->logger, (category), __VA_ARGS__)

#endif /* FTL_UTIL_LOG_H */
