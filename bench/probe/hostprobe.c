/* hostprobe: how fast this machine's CPUs run right now. On each CPU in
 * turn (pinned there), a fixed loop of arithmetic and scattered reads and
 * writes in a 256 kB table is timed a few times; one line per CPU, "CPU
 * MILLISECONDS", the quickest of its repeats (an interrupt in one repeat
 * then does not count; a slow host slows them all).
 * The work never changes, so on a quiet machine the time holds still to a
 * few percent; a longer time means something outside the benchmark's view
 * took the CPU or its caches (another guest on the host shows as no steal
 * here). The bench times it beside every run (bench/lib/hostprobe.mjs). */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

static uint32_t table[1 << 16];

static double probe(long iterations)
{
    uint64_t x = 88172645463325252ull, sum = 0;
    double t0 = zb_now_s();
    for (long i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        table[x & 0xffff] += (uint32_t)i;
        sum += table[(x >> 20) & 0xffff];
    }
    double ms = (zb_now_s() - t0) * 1e3;
    /* the sum is printed nowhere but must not be optimized away */
    __asm__ volatile("" : : "r"(sum));
    return ms;
}

static void usage(FILE *f)
{
    fputs("usage: hostprobe [ITERATIONS [REPEATS]]\n"
          "Times a fixed CPU loop (ITERATIONS steps, default 6000000, about 10 ms)\n"
          "REPEATS times (default 5) on each CPU this process may run on, one CPU\n"
          "after another, and prints \"CPU MILLISECONDS\" per line: the quickest\n"
          "repeat. Exit 2 on a bad argument.\n", f);
}

int main(int argc, char **argv)
{
    long iterations = 6000000, repeats = 5;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return ZB_EXIT_OK;
    }
    if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
        cli_version("hostprobe", NULL);
        return ZB_EXIT_OK;
    }
    if (argc > 3) {
        usage(stderr);
        return ZB_EXIT_USAGE;
    }
    if (argc >= 2 && cli_long("hostprobe", "ITERATIONS", argv[1], 1, 1L << 40, &iterations) != 0)
        return ZB_EXIT_USAGE;
    if (argc == 3 && cli_long("hostprobe", "REPEATS", argv[2], 1, 1000, &repeats) != 0)
        return ZB_EXIT_USAGE;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        perror("hostprobe: sched_getaffinity");
        return ZB_EXIT_FAIL;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) {
            perror("hostprobe: sched_setaffinity");
            return ZB_EXIT_FAIL;
        }
        double quickest = probe(iterations);
        for (long r = 1; r < repeats; r++) {
            double ms = probe(iterations);
            if (ms < quickest)
                quickest = ms;
        }
        printf("%d %.3f\n", cpu, quickest);
    }
    return ZB_EXIT_OK;
}
