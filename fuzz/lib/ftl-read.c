/* The FTL library module read.c, built with libFuzzer instrumentation. */
#include "read.c"
