/* The FTL library module recovery.c, built with libFuzzer instrumentation. */
#include "recovery.c"
