/* The FTL library module util/file.c, built with libFuzzer instrumentation. */
#include "util/file.c"
