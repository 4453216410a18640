/* The FTL library module keys.c, built with libFuzzer instrumentation. */
#include "keys.c"
