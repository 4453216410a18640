/* The FTL library module util/space.c, built with libFuzzer instrumentation. */
#include "util/space.c"
