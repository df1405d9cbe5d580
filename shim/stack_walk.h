// shim/stack_walk.h — capturing the call stack of an allocator call, inside the observed program.
//
// On glibc, libunwind (libunwind.so.8, which links glibc) is loaded *privately* (RTLD_LOCAL): its
// exported _Unwind_* and backtrace never enter the program's global scope, so they cannot take
// over the program's exception handling.  Where it is absent — always on musl — frames are walked
// by frame pointers: cheap, bounded by the thread's stack, but it stops at the first function
// built without them (StackRecord flag kStackFramePointers says which walker ran).
// Per-thread stack tables dedupe stacks by XXH3 of their frames and hand out small ids.
#pragma once
#include <cstdint>

namespace allocscope {

struct Slot;

constexpr unsigned kMaxStackDepth = 64;

// Chooses the walker; call once at start-up when stacks are wanted (it may dlopen libunwind).
void stack_walk_init(bool glibc);

// The id of the current call stack in `s`'s table (new stacks are queued for the next flush),
// or 0 when the queue of new stacks is full and cannot be written.
uint32_t capture_stack(Slot* s);

// Writes the stacks queued in `s` as Stacks chunks (flushers hold the slot's flushing flag).
bool write_pending_stacks(Slot* s);

// Writes a Modules chunk: every loaded object and its address range.
void write_modules();
// The same, only if objects were loaded or unloaded since the last one (dlopen, dlclose).
void write_modules_if_changed();

}  // namespace allocscope
