/* One hot pthread mutex taken in a named function, for the unwinding and symbol tests and
 * benchmarks. Build it as real programs are built: gcc -O2 -g -pthread (no frame-pointer flags).
 * usage: hot_mutex THREADS SECONDS [INSIDE OUTSIDE] — prints the lock+unlock operations done;
 * INSIDE and OUTSIDE are the rounds of work with the lock held and between (4 and 40: most
 * time in private work; 40 and 4: a futex-heavy lock). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_counter;
/* The stop flag on a cache line of its own: next to the lock and the counter, each worker's read
 * of it missed the cache at every round (false sharing), and `worker` outran `private_work`. */
static struct {
    volatile int flag;
    char pad[60];
} stop_line __attribute__((aligned(64)));
#define stop (stop_line.flag)
static int inside = 4, outside = 40;

/* Private work between the locked sections, so that both show in a profile. */
__attribute__((noinline)) static unsigned long private_work(unsigned long x, int rounds) {
    for (int i = 0; i < rounds; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

__attribute__((noinline)) static void take_the_lock(void) {
    pthread_mutex_lock(&the_lock);
    shared_counter = private_work(shared_counter, inside);
    pthread_mutex_unlock(&the_lock);
}

static void *worker(void *arg) {
    unsigned long *ops = arg, x = (unsigned long)arg;
    while (!stop) {
        take_the_lock();
        x = private_work(x, outside);
        (*ops)++;
    }
    return (void *)x;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    if (argc > 4) {
        inside = atoi(argv[3]);
        outside = atoi(argv[4]);
    }
    if (n < 1 || n > 256) n = 2;
    pthread_t threads[256];
    unsigned long ops[256][32] = {{0}};
    for (int i = 0; i < n; i++)
        pthread_create(&threads[i], NULL, worker, ops[i]);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    unsigned long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        total += ops[i][0];
    }
    printf("%lu\n", total);
    return 0;
}
