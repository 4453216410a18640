/* The FTL library module host/write.c, built with libFuzzer instrumentation. */
#include "host/write.c"
