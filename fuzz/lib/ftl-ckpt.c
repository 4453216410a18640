/* The FTL library module ckpt.c, built with libFuzzer instrumentation. */
#include "ckpt.c"
