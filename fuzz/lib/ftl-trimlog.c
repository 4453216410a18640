/* The FTL library module log/trimlog.c, built with libFuzzer instrumentation. */
#include "log/trimlog.c"
