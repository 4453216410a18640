/* The FTL library module map.c, built with libFuzzer instrumentation. */
#include "map.c"
