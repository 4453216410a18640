/* The FTL library module alloc.c, built with libFuzzer instrumentation. */
#include "alloc.c"
