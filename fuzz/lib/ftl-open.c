/* The FTL library module open.c, built with libFuzzer instrumentation. */
#include "open.c"
