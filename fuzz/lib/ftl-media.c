/* The FTL library module nand/media.c, built with libFuzzer instrumentation. */
#include "nand/media.c"
