/* The FTL library module fault.c, built with libFuzzer instrumentation. */
#include "fault.c"
