/* The FTL library module nand/slc.c, built with libFuzzer instrumentation. */
#include "nand/slc.c"
