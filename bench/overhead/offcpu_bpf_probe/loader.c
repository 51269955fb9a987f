// bench/overhead/offcpu-bpf-probe's loader: `loader OBJ TGID` loads the BPF object (libbpf, CO-RE against
// /sys/kernel/btf/vmlinux), attaches its programs, sets the accounted tgid (0: all), waits for
// SIGINT or SIGTERM, then prints the threads accounted, their summed off-CPU time and the
// program's runs.
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static volatile int stop;
static void on(int s) { (void)s; stop = 1; }
int main(int argc, char **argv) {
    struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
    if (!obj || bpf_object__load(obj)) { fprintf(stderr, "load failed\n"); return 1; }
    struct bpf_program *p;
    bpf_object__for_each_program(p, obj) if (!bpf_program__attach(p)) { fprintf(stderr, "attach failed\n"); return 1; }
    int cfg = bpf_object__find_map_fd_by_name(obj, "cfg");
    __u32 k = 0; __u64 v = strtoull(argv[2], 0, 10);
    bpf_map_update_elem(cfg, &k, &v, BPF_ANY);
    signal(SIGINT, on); signal(SIGTERM, on);
    printf("attached\n"); fflush(stdout);
    while (!stop) pause();
    int off = bpf_object__find_map_fd_by_name(obj, "off");
    __u32 key, next; __u64 sum = 0, val; int threads = 0; __u32 *cur = NULL;
    while (!bpf_map_get_next_key(off, cur, &next)) { bpf_map_lookup_elem(off, &next, &val); sum += val; threads++; key = next; cur = &key; }
    k = 1; bpf_map_lookup_elem(cfg, &k, &val);
    printf("threads %d off-cpu %.3f s switches %llu\n", threads, sum / 1e9, (unsigned long long)val);
    return 0;
}
