/* The FTL library module log/ckpt.c, built with libFuzzer instrumentation. */
#include "log/ckpt.c"
