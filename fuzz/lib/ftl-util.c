/* The FTL library module util.c, built with libFuzzer instrumentation. */
#include "util.c"
