/* The FTL library module format/format.c, built with libFuzzer instrumentation. */
#include "format/format.c"
