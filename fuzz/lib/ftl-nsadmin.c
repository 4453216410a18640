/* The FTL library module mngt/nsadmin.c, built with libFuzzer instrumentation. */
#include "mngt/nsadmin.c"
