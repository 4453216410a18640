/* The FTL library module log/recovery.c, built with libFuzzer instrumentation. */
#include "log/recovery.c"
