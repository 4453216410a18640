/* The FTL library module util/parse.c, built with libFuzzer instrumentation. */
#include "util/parse.c"
