/* The FTL library module cache.c, built with libFuzzer instrumentation. */
#include "cache.c"
