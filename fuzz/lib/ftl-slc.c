/* The FTL library module slc.c, built with libFuzzer instrumentation. */
#include "slc.c"
