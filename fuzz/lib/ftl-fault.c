/* The FTL library module track/fault.c, built with libFuzzer instrumentation. */
#include "track/fault.c"
