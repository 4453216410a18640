/* The FTL library module reclaim/wl.c, built with libFuzzer instrumentation. */
#include "reclaim/wl.c"
