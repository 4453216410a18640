/* The FTL library module track/hist.c, built with libFuzzer instrumentation. */
#include "track/hist.c"
