/* The FTL library module create.c, built with libFuzzer instrumentation. */
#include "create.c"
