/* The FTL library module host/destage.c, built with libFuzzer instrumentation. */
#include "host/destage.c"
