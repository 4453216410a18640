/* The FTL library module log/selfcheck.c, built with libFuzzer instrumentation. */
#include "log/selfcheck.c"
