/* The FTL library module nand/timing.c, built with libFuzzer instrumentation. */
#include "nand/timing.c"
