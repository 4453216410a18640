/* The FTL library module format.c, built with libFuzzer instrumentation. */
#include "format.c"
