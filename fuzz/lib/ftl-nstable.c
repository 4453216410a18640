/* The FTL library module format/nstable.c, built with libFuzzer instrumentation. */
#include "format/nstable.c"
