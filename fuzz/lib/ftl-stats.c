/* The FTL library module report/stats.c, built with libFuzzer instrumentation. */
#include "report/stats.c"
