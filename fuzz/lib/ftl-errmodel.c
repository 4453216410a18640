/* The FTL library module nand/errmodel.c, built with libFuzzer instrumentation. */
#include "nand/errmodel.c"
