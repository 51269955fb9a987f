// The user context both tracers copy into a sampled record (offcpu.bpf.c's BEGIN, locks.bpf.c's
// futex SAMPLE): the user registers the unwinder starts from and a copy of the stack from sp
// up. Included after the file's CO-RE `struct pt_regs` (ip, sp, bp) and `struct task_struct`.
#pragma once

// Writes the current task's user ip, sp and bp to `ip_sp_bp` (three words, in that order) and
// copies `size` bytes of its stack from sp to `stack`, or less where the stack's top is nearer
// (a quarter, a sixteenth, a sixty-fourth); returns the bytes copied (0: none could be read).
static __always_inline __u32 copy_user_context(__u64 *ip_sp_bp, __u8 *stack, const __u32 size)
{
    struct pt_regs *regs =
        (struct pt_regs *)bpf_task_pt_regs((struct task_struct *)bpf_get_current_task_btf());
    ip_sp_bp[0] = BPF_CORE_READ(regs, ip);
    ip_sp_bp[1] = BPF_CORE_READ(regs, sp);
    ip_sp_bp[2] = BPF_CORE_READ(regs, bp);
    void *sp = (void *)ip_sp_bp[1];
    if (bpf_probe_read_user(stack, size, sp) == 0)
        return size;
    if (bpf_probe_read_user(stack, size / 4, sp) == 0)
        return size / 4;
    if (bpf_probe_read_user(stack, size / 16, sp) == 0)
        return size / 16;
    if (bpf_probe_read_user(stack, size / 64, sp) == 0)
        return size / 64;
    return 0;
}
