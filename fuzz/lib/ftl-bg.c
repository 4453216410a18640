/* The FTL library module host/bg.c, built with libFuzzer instrumentation. */
#include "host/bg.c"
