/* The FTL library module bg.c, built with libFuzzer instrumentation. */
#include "bg.c"
