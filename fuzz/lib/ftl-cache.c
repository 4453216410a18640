/* The FTL library module host/cache.c, built with libFuzzer instrumentation. */
#include "host/cache.c"
