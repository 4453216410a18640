/* The FTL library module destage.c, built with libFuzzer instrumentation. */
#include "destage.c"
