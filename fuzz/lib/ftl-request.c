/* The FTL library module request.c, built with libFuzzer instrumentation. */
#include "request.c"
