/* The FTL library module log/pmap.c, built with libFuzzer instrumentation. */
#include "log/pmap.c"
