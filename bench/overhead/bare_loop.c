/* bare_loop: the same ops scalelab's null_syscall and page_fault workloads do, with no harness.
 *
 * usage: bare_loop null_syscall|raw_syscall|page_fault|page_fault_call TASKS WARMUP_S DURATION_S
 * null_syscall: the C library's getppid(), as will-it-scale's getppid1 and scalelab's null_syscall
 *   call it: the same op, so the ratio measures the harness.
 * raw_syscall: getppid as one inline `syscall` instruction, no library call: what the call and its
 *   return (after the kernel's return-stack refill) add to the op.
 * page_fault_call: page_fault with the faulting store in a small function of its own, called per
 *   page and returning right after the store; the same user work, another code shape
 *   (bench/overhead/fault-shape compares the two).
 * Threads are pinned to CPU i (like scalelab --pin cores when TASKS <= CPUs), released together,
 * and counted in padded per-thread counters read by the main thread at the window's edges.
 * BARE_MODE=processes forks the tasks instead (counters and flags in shared memory), as
 * scalelab --mode processes and will-it-scale's *_processes do.
 * Prints: ops_per_sec <value>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOT 32 /* u64s: 256 bytes */
#define SIZE (128UL << 20)

static _Atomic uint64_t *counters;
/* go and stop, in memory shared with forked tasks. */
static _Atomic int *flags;
#define go (flags[0])
#define stop_flag (flags[64])
enum { NULL_SYSCALL, RAW_SYSCALL, PAGE_FAULT, PAGE_FAULT_CALL };
static int workload, ncpus;

static inline long raw_getppid(void) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(110L) : "rcx", "r11", "memory");
    return r;
}
/* The faulting store of page_fault_call, kept out of line. */
__attribute__((noinline)) static void touch_page(char *p) {
    *(volatile char *)p = 1;
    __asm__ volatile("" ::: "memory");
}

static int order[1024]; /* the CPU of thread i: BARE_CPUS="1,0" (scalelab's order), else i */

static void *worker(void *arg) {
    long i = (long)arg;
    if ((int)i < ncpus) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(order[i], &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    while (!atomic_load(&go)) {}
    uint64_t n = 0;
    long page = sysconf(_SC_PAGESIZE);
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        if (workload == NULL_SYSCALL || workload == RAW_SYSCALL) {
            if (workload == RAW_SYSCALL)
                raw_getppid();
            else
                getppid();
            n++;
            atomic_store_explicit(&counters[i * SLOT], n, memory_order_relaxed);
        } else {
            char *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) { perror("mmap"); exit(1); }
            for (size_t off = 0; off < SIZE; off += page) {
                if (workload == PAGE_FAULT_CALL)
                    touch_page(p + off);
                else
                    *(volatile char *)(p + off) = 1;
                n++;
                atomic_store_explicit(&counters[i * SLOT], n, memory_order_relaxed);
                if (atomic_load_explicit(&stop_flag, memory_order_relaxed)) break;
            }
            munmap(p, SIZE);
        }
    }
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t total(int tasks) {
    uint64_t s = 0;
    for (int i = 0; i < tasks; i++) s += atomic_load_explicit(&counters[i * SLOT], memory_order_relaxed);
    return s;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s null_syscall|raw_syscall|page_fault|page_fault_call TASKS WARMUP_S DURATION_S\n", argv[0]); return 2; }
    if (strcmp(argv[1], "page_fault") == 0) workload = PAGE_FAULT;
    else if (strcmp(argv[1], "page_fault_call") == 0) workload = PAGE_FAULT_CALL;
    else if (strcmp(argv[1], "raw_syscall") == 0) workload = RAW_SYSCALL;
    else if (strcmp(argv[1], "null_syscall") == 0) workload = NULL_SYSCALL;
    else { fprintf(stderr, "unknown workload %s\n", argv[1]); return 2; }
    int tasks = atoi(argv[2]);
    double warmup = atof(argv[3]), duration = atof(argv[4]);
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (tasks > ncpus) ncpus = 0; /* like --pin auto: no pinning when oversubscribed */
    for (int i = 0; i < 1024; i++) order[i] = i;
    const char *cpus = getenv("BARE_CPUS");
    for (int i = 0; cpus && *cpus && i < 1024; i++) {
        order[i] = (int)strtol(cpus, (char **)&cpus, 10);
        if (*cpus == ',') cpus++;
    }
    int processes = getenv("BARE_MODE") && strcmp(getenv("BARE_MODE"), "processes") == 0;
    size_t bytes = (size_t)tasks * SLOT * 8 + 4096;
    char *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) { perror("mmap"); return 1; }
    flags = (_Atomic int *)shared;
    counters = (_Atomic uint64_t *)(shared + 4096);
    pthread_t th[tasks];
    pid_t pids[tasks];
    for (long i = 0; i < tasks; i++) {
        if (processes) {
            pids[i] = fork();
            if (pids[i] < 0) { perror("fork"); return 1; }
            if (pids[i] == 0) { worker((void *)i); _exit(0); }
        } else {
            pthread_create(&th[i], NULL, worker, (void *)i);
        }
    }
    atomic_store(&go, 1);
    usleep((useconds_t)(warmup * 1e6));
    double t0 = now();
    uint64_t a = total(tasks);
    usleep((useconds_t)(duration * 1e6));
    double t1 = now();
    uint64_t b = total(tasks);
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < tasks; i++) {
        if (processes) waitpid(pids[i], NULL, 0);
        else pthread_join(th[i], NULL);
    }
    printf("ops_per_sec %.1f\n", (double)(b - a) / (t1 - t0));
    return 0;
}
