/* The FTL library module wl.c, built with libFuzzer instrumentation. */
#include "wl.c"
