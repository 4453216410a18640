/* The FTL library module powercut.c, built with libFuzzer instrumentation. */
#include "powercut.c"
