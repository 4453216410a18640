/* The FTL library module ftl.c, built with libFuzzer instrumentation. */
#include "ftl.c"
