/* The FTL library module report/inspect.c, built with libFuzzer instrumentation. */
#include "report/inspect.c"
