/* The FTL library module stats.c, built with libFuzzer instrumentation. */
#include "stats.c"
