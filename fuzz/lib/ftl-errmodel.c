/* The FTL library module errmodel.c, built with libFuzzer instrumentation. */
#include "errmodel.c"
