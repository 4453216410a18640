/* The FTL library module reclaim/erase.c, built with libFuzzer instrumentation. */
#include "reclaim/erase.c"
