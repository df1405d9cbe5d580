// shim/signal_api.cpp — see signal_api.h.
#include "signal_api.h"

#include <dlfcn.h>

#include <cerrno>
#include <atomic>

#include "allocscope_core.h"
#include "cpu_samples.h"
#include "peer_waits.h"
#include "recorder.h"
#include "sys.h"

namespace allocscope {
namespace {

template <class F>
F next_definition(std::atomic<F>& cache, const char* name) {
  F f = cache.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    cache.store(f, std::memory_order_release);
  }
  return f;
}

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using SigwaitFn = int (*)(const sigset_t*, int*);
using SigwaitinfoFn = int (*)(const sigset_t*, siginfo_t*);
using SigtimedwaitFn = int (*)(const sigset_t*, siginfo_t*, const struct timespec*);
using SignalfdFn = int (*)(int, const sigset_t*, int);
using SigmaskFn = int (*)(int, const sigset_t*, sigset_t*);
std::atomic<SigactionFn> g_next_sigaction{nullptr};
std::atomic<SignalFn> g_next_signal{nullptr};
std::atomic<SigwaitFn> g_next_sigwait{nullptr};
std::atomic<SigwaitinfoFn> g_next_sigwaitinfo{nullptr};
std::atomic<SigtimedwaitFn> g_next_sigtimedwait{nullptr};
std::atomic<SignalfdFn> g_next_signalfd{nullptr};
std::atomic<SigmaskFn> g_next_pthread_sigmask{nullptr};
std::atomic<SigmaskFn> g_next_sigprocmask{nullptr};
using SigaltstackFn = int (*)(const stack_t*, stack_t*);
std::atomic<SigaltstackFn> g_next_sigaltstack{nullptr};

// The C libraries' sigset_t both begin with the kernel's mask of signals 1-64, signal n at bit n - 1:
// read and written here rather than through sigismember and sigdelset (the shim binds no more
// libc symbols than it must).
bool has_signal(const sigset_t& s, int sig) {
  uint64_t w;
  __builtin_memcpy(&w, &s, sizeof w);
  return (w & sys::signal_bit(sig)) != 0;
}
void drop_signal(sigset_t& s, int sig) {
  uint64_t w;
  __builtin_memcpy(&w, &s, sizeof w);
  w &= ~sys::signal_bit(sig);
  __builtin_memcpy(&s, &w, sizeof w);
}

// Whether a change of a thread's signal mask blocks the shim's signal.
bool blocks_ours(int how, const void* set) {
  const int sig = hold_signal_chosen();
  return sig > 0 && how != SIG_UNBLOCK && has_signal(*static_cast<const sigset_t*>(set), sig);
}

// After a thread's signal mask changed: whether it now blocks the shim's signal, if that changed.
void mask_changed(int how, const void* set) {
  const int sig = hold_signal_chosen();
  if (sig <= 0) return;
  const bool named = has_signal(*static_cast<const sigset_t*>(set), sig);
  if (!named && how != SIG_SETMASK) return;
  const int saved = errno;
  const bool blocked = named && how != SIG_UNBLOCK;
  cpu_samples_blocked(blocked);
  if (blocked) holds_blocked();
  else accept_holds();
  errno = saved;
}

// Calls `change` (the next pthread_sigmask or sigprocmask) so that no hold request is sent to this
// thread while it blocks the shim's signal, nor left pending behind the new mask (refuse_holds).
template <class Change>
int change_mask(int how, const void* set, Change change) {
  const bool blocks = set && blocks_ours(how, set);
  if (blocks) {
    const int saved = errno;
    refuse_holds();
    errno = saved;
  }
  const int r = change();
  if (r == 0 && set) mask_changed(how, set);
  else if (blocks) accept_holds();  // the mask did not change
  return r;
}

// The set a program waits on with sigwait or reads with signalfd, as passed on.  A set that holds
// every real-time signal the shim chooses from (sigfillset: a thread that takes whatever comes)
// goes on without the shim's signal (holds, CPU samples): the program never reads one as its own.
// A narrower set that names the shim's signal is the program's claim on it, as a handler would be:
// the shim stops using it (program_takes_signal), and the set goes on unchanged.
sigset_t without_ours(const void* set) {
  sigset_t s = *static_cast<const sigset_t*>(set);
  const int sig = hold_signal_chosen();
  if (sig <= 0 || !has_signal(s, sig)) return s;
  bool every = true;
  for (int n = kFirstShimSignal; n <= kLastShimSignal && every; ++n) every = has_signal(s, n);
  if (every) drop_signal(s, sig);
  else program_takes_signal(sig);
  return s;
}

}  // namespace

int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  const SigactionFn f = next_definition(g_next_sigaction, "sigaction");
  return f ? f(sig, act, old) : -1;
}

}  // namespace allocscope

using namespace allocscope;

extern "C" {

// The shim's own handler on the signal it holds threads with is not the program's: asked for the
// signal's disposition, the program hears the default it left there (a program that looks for a
// free real-time signal that way finds it free), and one that installs its own handler gets that
// default back as the old one.  (The raw rt_sigaction system call still shows the shim's.)
int allocscope_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  const bool ours = sig > 0 && hold_signal_chosen() == sig;
  if (act) program_takes_signal(sig);
  const int r = real_sigaction(sig, act, old);
  if (r == 0 && old && ours) __builtin_memset(static_cast<void*>(old), 0, sizeof *old);  // SIG_DFL, no flags, no mask
  return r;
}

sighandler_t allocscope_signal(int sig, sighandler_t handler) {
  const bool ours = sig > 0 && hold_signal_chosen() == sig;
  program_takes_signal(sig);
  const SignalFn f = next_definition(g_next_signal, "signal");
  const sighandler_t previous = f ? f(sig, handler) : SIG_ERR;
  return ours && previous != SIG_ERR ? SIG_DFL : previous;
}

int allocscope_pthread_sigmask(int how, const void* set, void* old) {
  const SigmaskFn f = next_definition(g_next_pthread_sigmask, "pthread_sigmask");
  if (!f) return ENOSYS;
  return change_mask(how, set, [&] { return f(how, static_cast<const sigset_t*>(set), static_cast<sigset_t*>(old)); });
}

int allocscope_sigprocmask(int how, const void* set, void* old) {
  const SigmaskFn f = next_definition(g_next_sigprocmask, "sigprocmask");
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return change_mask(how, set, [&] { return f(how, static_cast<const sigset_t*>(set), static_cast<sigset_t*>(old)); });
}

int allocscope_sigwait(const void* set, int* sig) {
  const SigwaitFn f = next_definition(g_next_sigwait, "sigwait");
  if (!f) return ENOSYS;
  const sigset_t s = set ? without_ours(set) : sigset_t{};
  return f(set ? &s : nullptr, sig);
}

int allocscope_sigwaitinfo(const void* set, void* info) {
  const SigwaitinfoFn f = next_definition(g_next_sigwaitinfo, "sigwaitinfo");
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  const sigset_t s = set ? without_ours(set) : sigset_t{};
  return f(set ? &s : nullptr, static_cast<siginfo_t*>(info));
}

int allocscope_sigtimedwait(const void* set, void* info, const void* timeout) {
  const SigtimedwaitFn f = next_definition(g_next_sigtimedwait, "sigtimedwait");
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  const sigset_t s = set ? without_ours(set) : sigset_t{};
  return f(set ? &s : nullptr, static_cast<siginfo_t*>(info), static_cast<const struct timespec*>(timeout));
}

int allocscope_signalfd(int fd, const void* mask, int flags) {
  const SignalfdFn f = next_definition(g_next_signalfd, "signalfd");
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  const sigset_t s = mask ? without_ours(mask) : sigset_t{};
  return f(fd, mask ? &s : nullptr, flags);
}

// The thread's alternate signal stack, for on_alternate_stack (recorder.h).  One set by the raw
// system call is not seen.
int allocscope_sigaltstack(const void* ss, void* old) {
  const SigaltstackFn f = next_definition(g_next_sigaltstack, "sigaltstack");
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  const int r = f(static_cast<const stack_t*>(ss), static_cast<stack_t*>(old));
  if (r == 0 && ss) {
    const stack_t& s = *static_cast<const stack_t*>(ss);
    ThreadCtx& t = t_ctx;
    const bool off = (s.ss_flags & SS_DISABLE) != 0;
    t.alt_stack_lo = off ? 0 : reinterpret_cast<uint64_t>(s.ss_sp);
    t.alt_stack_hi = off ? 0 : t.alt_stack_lo + s.ss_size;
  }
  return r;
}

}  // extern "C"
