/* The FTL library module report/metrics.c, built with libFuzzer instrumentation. */
#include "report/metrics.c"
