/* The FTL library module deadline.c, built with libFuzzer instrumentation. */
#include "deadline.c"
