/* The FTL library module trim.c, built with libFuzzer instrumentation. */
#include "trim.c"
