/* The FTL library module metrics.c, built with libFuzzer instrumentation. */
#include "metrics.c"
