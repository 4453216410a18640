/* The FTL library module util/bell.c, built with libFuzzer instrumentation. */
#include "util/bell.c"
