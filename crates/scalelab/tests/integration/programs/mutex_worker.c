/* The --cmd attribution tests' program: THREADS threads, each alternating a hot private
 * computation (private_work_a, or private_work_b with role `b`) and one hot pthread_mutex_t
 * taken in take_the_lock. Plain `gcc -O2 -g -pthread`: no frame-pointer flags, as real
 * programs are built. Each thread does a fixed amount of work, so a run takes about as long at
 * any THREADS on as many CPUs.
 *
 * usage: mutex_worker THREADS [a|b] [ROUNDS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared_counter;
static long rounds = 40000;

/* Two private computations with different constants, so that the compiler cannot fold them
 * into one: a profile tells the two roles' processes apart by these names. */
__attribute__((noinline, noclone)) unsigned long private_work_a(unsigned long x)
{
    for (int i = 0; i < 600; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

__attribute__((noinline, noclone)) unsigned long private_work_b(unsigned long x)
{
    for (int i = 0; i < 600; i++)
        x = x * 2862933555777941757UL + 3037000493UL;
    return x;
}

/* The one hot lock: a critical section under a shared mutex. Every 64th time the holder also
 * sleeps 50 us in it, so that the other threads wait in the kernel (futex) even on a machine
 * too loaded to run them at the same time. */
__attribute__((noinline, noclone)) void take_the_lock(long round)
{
    pthread_mutex_lock(&the_lock);
    for (int i = 0; i < 1000; i++)
        shared_counter++;
    if ((round & 63) == 0)
        usleep(50);
    pthread_mutex_unlock(&the_lock);
}

static unsigned long (*work)(unsigned long) = private_work_a;

static void *worker(void *arg)
{
    unsigned long x = (unsigned long)arg + 1;
    for (long r = 0; r < rounds; r++) {
        x = work(x);
        take_the_lock(r);
    }
    return (void *)x;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 2 && strcmp(argv[2], "b") == 0)
        work = private_work_b;
    if (argc > 3)
        rounds = atol(argv[3]);
    if (threads < 1 || threads > 1024 || rounds < 1) {
        fprintf(stderr, "usage: mutex_worker THREADS [a|b] [ROUNDS]\n");
        return 2;
    }
    pthread_t *t = calloc(threads, sizeof *t);
    unsigned long sum = 0;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (unsigned long)r;
    }
    printf("done %lu %lu\n", shared_counter, sum & 0xff);
    return 0;
}
