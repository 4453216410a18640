/* The FTL library module host/ns.c, built with libFuzzer instrumentation. */
#include "host/ns.c"
