/* nbdkit-ftl: messages.  See log.h. */

#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

static void emit (const struct ftl_logger *lg, enum ftl_log_level level,
                  const char *fs, va_list ap)
  __attribute__ ((format (printf, 3, 0)));

static void
emit (const struct ftl_logger *lg, enum ftl_log_level level,
      const char *fs, va_list ap)
{
  char msg[512];

  vsnprintf (msg, sizeof msg, fs, ap);
  lg->fn (lg->opaque, level, msg);
}

void
ftl_log (const struct ftl_logger *lg, enum ftl_log_level level,
         const char *fs, ...)
{
  va_list ap;

  if (!lg->fn)
    return;
  if (level == FTL_LOG_ERROR && lg->off &&
      __atomic_load_n (lg->off, __ATOMIC_ACQUIRE))
    level = FTL_LOG_WARN;
  va_start (ap, fs);
  emit (lg, level, fs, ap);
  va_end (ap);
}

void
ftl_log_debug (const struct ftl_logger *lg, unsigned category,
               const char *fs, ...)
{
  va_list ap;

  if (!lg->fn || !(lg->debug & category))
    return;
  va_start (ap, fs);
  emit (lg, FTL_LOG_DEBUG, fs, ap);
  va_end (ap);
}
