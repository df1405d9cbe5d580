// shim/signal_api.cpp — see signal_api.h.
#include "signal_api.h"

#include <dlfcn.h>

#include <atomic>

#include "allocscope_core.h"
#include "peer_waits.h"

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
std::atomic<SigactionFn> g_next_sigaction{nullptr};
std::atomic<SignalFn> g_next_signal{nullptr};

}  // namespace

int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  const SigactionFn f = next_definition(g_next_sigaction, "sigaction");
  return f ? f(sig, act, old) : -1;
}

}  // namespace allocscope

using namespace allocscope;

extern "C" {

int allocscope_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (act) program_takes_signal(sig);
  return real_sigaction(sig, act, old);
}

sighandler_t allocscope_signal(int sig, sighandler_t handler) {
  program_takes_signal(sig);
  const SignalFn f = next_definition(g_next_signal, "signal");
  return f ? f(sig, handler) : SIG_ERR;
}

}  // extern "C"
