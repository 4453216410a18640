/* The FTL library module log/durable.c, built with libFuzzer instrumentation. */
#include "log/durable.c"
