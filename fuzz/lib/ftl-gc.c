/* The FTL library module gc.c, built with libFuzzer instrumentation. */
#include "gc.c"
