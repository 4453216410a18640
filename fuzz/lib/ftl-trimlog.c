/* The FTL library module trimlog.c, built with libFuzzer instrumentation. */
#include "trimlog.c"
