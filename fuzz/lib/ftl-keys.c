/* The FTL library module mngt/keys.c, built with libFuzzer instrumentation. */
#include "mngt/keys.c"
