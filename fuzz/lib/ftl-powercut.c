/* The FTL library module mngt/powercut.c, built with libFuzzer instrumentation. */
#include "mngt/powercut.c"
