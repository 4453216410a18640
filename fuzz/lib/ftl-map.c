/* The FTL library module log/map.c, built with libFuzzer instrumentation. */
#include "log/map.c"
