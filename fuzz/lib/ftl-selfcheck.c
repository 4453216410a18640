/* The FTL library module selfcheck.c, built with libFuzzer instrumentation. */
#include "selfcheck.c"
