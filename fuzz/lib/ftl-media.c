/* The FTL library module media.c, built with libFuzzer instrumentation. */
#include "media.c"
