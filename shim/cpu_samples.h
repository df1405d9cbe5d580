// shim/cpu_samples.h — where each thread's CPU time goes (format.h kModeCpuSamples, CpuSamples).
//
// A thread's time inside a call is not its CPU time: with more threads than CPUs a thread waits
// for a CPU inside its calls as much as outside them, and a thread asleep on a lock uses none.
// What a second of CPU time more costs a program whose threads queue for the CPUs is every other
// thread's wait too, so the parts of a CPU-time gap (the allocator's, the program's locks', the
// rest) are what a comparison of two such runs needs.  perf samples the CPU at a fixed rate; the
// shim does the same inside the process, without a helper thread: each thread gets a POSIX timer
// on its own CPU clock (CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) that signals it every
// format::kCpuSampleNs of its CPU time, user or system.  The handler — the shim's one signal, the
// holds' (peer_waits.h), told apart by si_code SI_TIMER — notes where the thread is: inside an
// allocator call (recorder.h in_call_depth), inside the shim's own work (depth > 0), inside a
// traced lock call that waits or an unlock (t_in_lock, t_unlocks_done: lock_waits.h), or inside a
// real trylock (the interrupted address within its code: loaded_object.h), or elsewhere.  No lock,
// no allocation, no system call in the handler.
//
// Only with lock tracing (ALLOCSCOPE_CPU_SAMPLES, default ALLOCSCOPE_LOCKS): a timer signal
// interrupts the program now and then, as a profiler's does.  A thread has a timer only while it
// lets the signal through: blocked, a sample would stay pending, and a thread that takes its
// signals with sigwait could read it as its own (pthread_sigmask and sigprocmask are interposed:
// signal_api.h).  A program that installs a handler on the signal, or waits on it by name, ends
// the timers of every thread (program_takes_signal); a thread's timer is deleted when it exits
// and before an exec (a sample pending across the exec would end the next program).
#pragma once
#include <cstdint>

#include "thread_slot.h"

namespace allocscope {

extern bool g_cpu_samples;  // ALLOCSCOPE_CPU_SAMPLES=1 (default: lock tracing's setting)

// Starts the calling thread's timer for its new slot `s` (the thread owns it): a timer left by an
// earlier owner of the slot is deleted first.  Nothing when sampling is off or the signal cannot be had.
void start_cpu_samples(Slot* s);
// The calling thread changed its signal mask: a thread that now blocks the signal loses its timer
// (and a sample pending on it), one that no longer blocks it gets one again.
void cpu_samples_blocked(bool blocked);
// Deletes the calling thread's timer (thread exit, exec).
void stop_cpu_samples(Slot* s);
// Deletes every thread's timer, for good (the program took the signal).
void stop_all_cpu_samples();
// The signal handler's part: one sample of the calling thread, interrupted at `pc` (0: not known).
void take_cpu_sample(uintptr_t pc);
// Finds the code of the real trylock functions (lock_waits.h), whose calls are not marked: a
// sample interrupted inside one is inside a lock call.  Once, when the library loads.
void learn_trylock_code();

bool cpu_samples_pending(const Slot* s);
// Writes the thread's CpuSamples chunk if its counts changed (by the holder of `flushing`).
bool write_cpu_samples(Slot* s);

}  // namespace allocscope
