/* xorshift_loop: a CPU-bound command whose work is exactly its argument — ITERATIONS dependent
 * xorshift64 steps (each needs the last, so nothing vectorises or overlaps), no memory traffic,
 * no syscalls after start-up. bench/validity/ab-validity runs it as A and B; B with 3% more iterations
 * does 3% more work.
 *
 * usage: xorshift_loop ITERATIONS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s ITERATIONS\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    uint64_t x = 88172645463325252ULL;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    /* Keeps the loop live; never true for this seed. */
    if (x == 42)
        puts("42");
    return 0;
}
