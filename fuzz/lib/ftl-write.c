/* The FTL library module write.c, built with libFuzzer instrumentation. */
#include "write.c"
