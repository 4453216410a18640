/* The FTL library module log/mapcache.c, built with libFuzzer instrumentation. */
#include "log/mapcache.c"
