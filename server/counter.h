/* The server's figures: one writer, any number of readers.
 *
 * Contract: a counter is written by one thread only (its loop), with
 * relaxed loads and stores and no locked instruction; /stats, the acceptor
 * and main read it from other threads, and may see it a few updates late.
 * Nothing here is ever written by two threads. */
#ifndef ZB_COUNTER_H
#define ZB_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

#define RELAXED memory_order_relaxed

typedef _Atomic uint64_t counter;
#define READ(c) atomic_load_explicit(&(c), RELAXED)
#define SET(c, v) atomic_store_explicit(&(c), (v), RELAXED)
#define BUMP(c) SET(c, READ(c) + 1)
#define DROP(c) SET(c, READ(c) - 1)

#endif
