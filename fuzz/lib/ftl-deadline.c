/* The FTL library module track/deadline.c, built with libFuzzer instrumentation. */
#include "track/deadline.c"
