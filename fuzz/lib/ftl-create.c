/* The FTL library module log/create.c, built with libFuzzer instrumentation. */
#include "log/create.c"
