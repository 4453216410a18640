/* The FTL library module report/collect.c, built with libFuzzer instrumentation. */
#include "report/collect.c"
