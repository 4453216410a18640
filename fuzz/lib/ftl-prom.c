/* The FTL library module report/prom.c, built with libFuzzer instrumentation. */
#include "report/prom.c"
