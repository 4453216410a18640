/* The FTL library module inspect.c, built with libFuzzer instrumentation. */
#include "inspect.c"
