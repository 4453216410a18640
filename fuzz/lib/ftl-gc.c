/* The FTL library module reclaim/gc.c, built with libFuzzer instrumentation. */
#include "reclaim/gc.c"
