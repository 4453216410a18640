/* The FTL library module util/clock.c, built with libFuzzer instrumentation. */
#include "util/clock.c"
