/* The FTL library module host/request.c, built with libFuzzer instrumentation. */
#include "host/request.c"
