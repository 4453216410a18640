/* The FTL library module mngt/open.c, built with libFuzzer instrumentation. */
#include "mngt/open.c"
