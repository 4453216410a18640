/* The FTL library module host/read.c, built with libFuzzer instrumentation. */
#include "host/read.c"
