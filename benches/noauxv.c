/* Runs a command with prctl(PR_GET_AUXV) failing (EINVAL), so that rustix
   falls back to /proc/self/auxv, which valgrind emulates (its vdso address
   is then one valgrind maps).
   Usage: noauxv CMD [ARGS...]. The filter reads the system-call number
   without checking seccomp_data.arch, so it is right only for the native
   architecture's calls (x86_64 here; a 32-bit call through int 0x80 would be
   matched against the wrong table). */
#include <stddef.h>
#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/audit.h>
int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: noauxv CMD [ARGS...]\n"); return 2; }
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x41555856, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = { .len = sizeof f / sizeof f[0], .filter = f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p)) { perror("seccomp"); return 2; }
    execvp(argv[1], argv + 1); perror("exec"); return 2;
}
