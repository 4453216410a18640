/* The FTL library module timing.c, built with libFuzzer instrumentation. */
#include "timing.c"
