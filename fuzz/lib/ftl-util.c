/* The FTL library module util/util.c, built with libFuzzer instrumentation. */
#include "util/util.c"
