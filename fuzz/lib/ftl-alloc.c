/* The FTL library module log/alloc.c, built with libFuzzer instrumentation. */
#include "log/alloc.c"
