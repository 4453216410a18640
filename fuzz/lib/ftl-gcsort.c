/* The FTL library module reclaim/gcsort.c, built with libFuzzer instrumentation. */
#include "reclaim/gcsort.c"
