// A backtrace on the GPU machine, which has no gdb: preloaded, it prints every frame of a SIGSEGV or
// SIGBUS as "SEGV_FRAME FILE +OFFSET SYMBOL" (OFFSET from the object's load base) and exits 128+sig.
//   gcc -shared -fPIC -O1 -o /tmp/segv.so scripts/dev/segv_backtrace.c -ldl
//   LD_PRELOAD=/tmp/segv.so python3 repro.py 2> log
//   grep SEGV_FRAME log | while read -r _ f o _; do echo "$o $(addr2line -f -C -i -e "$f" "$o")"; done
// Build the object under test with -g (pip: --config-settings=cmake.build-type=RelWithDebInfo).
// It found the static-libstdc++ crash that src/core/text_words.hpp explains.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  void* frames[64];
  int n = backtrace(frames, 64);
  fprintf(stderr, "SEGV_BACKTRACE signal %d address %p, %d frames\n", sig, info->si_addr, n);
  for (int i = 0; i < n; ++i) {
    Dl_info d;
    if (dladdr(frames[i], &d) && d.dli_fname)
      fprintf(stderr, "SEGV_FRAME %s +0x%lx %s\n", d.dli_fname,
              (unsigned long)((char*)frames[i] - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
    else
      fprintf(stderr, "SEGV_FRAME ? %p\n", frames[i]);
  }
  fflush(stderr);
  _exit(128 + sig);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
}
