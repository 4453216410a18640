/* The FTL library module durable.c, built with libFuzzer instrumentation. */
#include "durable.c"
