/* The FTL library module util/log.c, built with libFuzzer instrumentation. */
#include "util/log.c"
