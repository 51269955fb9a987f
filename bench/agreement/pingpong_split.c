/* pingpong_split: two threads of one process take turns on CPU 0 through two pipes, ROUNDS round
 * trips, then each prints its own on-CPU time as the scheduler counts it
 * (/proc/thread-self/schedstat, first field). bench/agreement/profile-split profiles it under perf and
 * compares each thread's cpu-clock samples with that time.
 *
 * usage: pingpong_split ROUNDS
 * prints: main_tid TID main_ns NS partner_ns NS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int to_partner[2], to_main[2];
static long rounds;
static double partner_ns;

static double on_cpu_ns(void) {
    double ns = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f || fscanf(f, "%lf", &ns) != 1) { perror("schedstat"); exit(1); }
    fclose(f);
    return ns;
}

static void *partner(void *unused) {
    (void)unused;
    char c;
    for (long i = 0; i < rounds; i++) {
        if (read(to_partner[0], &c, 1) != 1 || write(to_main[1], &c, 1) != 1) exit(1);
    }
    partner_ns = on_cpu_ns();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 || (rounds = atol(argv[1])) <= 0) {
        fprintf(stderr, "usage: pingpong_split ROUNDS\n");
        return 2;
    }
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    if (sched_setaffinity(0, sizeof cpus, &cpus) || pipe(to_partner) || pipe(to_main)) {
        perror("setup");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, partner, NULL)) return 1;
    char c = 1;
    for (long i = 0; i < rounds; i++) {
        if (write(to_partner[1], &c, 1) != 1 || read(to_main[0], &c, 1) != 1) return 1;
    }
    pthread_join(t, NULL);
    printf("main_tid %d main_ns %.0f partner_ns %.0f\n", gettid(), on_cpu_ns(), partner_ns);
    return 0;
}
