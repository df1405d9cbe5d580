// shim/process_state.h — per-process state of the recorder: mode, profile file, registry counters.
//
// The state lives in an anonymous mapping marked MADV_WIPEONFORK, so a fork child finds it zeroed
// (mode Uninitialised) and starts its own profile on its first allocator call.  Where the kernel
// lacks MADV_WIPEONFORK, a pid check before every write keeps a child out of its parent's file.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "allocscope/format.h"

namespace allocscope {

enum ProcessMode : int {
  kModeUninitialised = 0,
  kModeInitialising = 1,
  kModeActive = 2,
  kModePassive = 3,    // observing nothing: forwarding only (setuid, no output, gave up)
  kModeTornDown = 4,   // after the final flush at exit: forwarding (and counting) only
};

struct ProcessState {
  std::atomic<int> mode;
  int fd;
  int pid;
  std::atomic<uint32_t> next_serial;
  std::atomic<uint32_t> live_threads;
  std::atomic<uint32_t> max_live_threads;
  std::atomic<uint64_t> write_errors;
  std::atomic<int> write_warned;
  uint64_t start_tick;
  // The thread that started the profile (initialise) is observed from start_tick on, whenever its
  // first allocator call comes: its slot takes start_tick and this reading of its rusage (read right
  // after start_tick) once (start_taken), when that thread first gets one (slot_registry.cpp).
  format::Rusage start_rusage;
  int start_tid;                         // 0 until start_tick and start_rusage are set
  std::atomic<int> start_taken;
  uint64_t file_dev, file_ino;           // the profile's identity: the program may close fd and reuse it
  std::atomic<uint64_t> bytes_reserved;  // bytes appended or being appended (RLIMIT_FSIZE)
  char path[4096];
};

extern ProcessState* g_ps;

// True when threads of this process may record (initialising it on first use). Never blocks: a
// thread that arrives while another initialises may count at once; its first flush waits for the
// profile to be open.
bool process_active();

// Appends one chunk. `buf` holds room for a ChunkHeader followed by `payload_len` payload bytes.
bool write_chunk(format::ChunkType type, unsigned char* buf, size_t payload_len);

// Final flush of every thread and the ProcessEnd chunk (exit, or the test API).
void shutdown_process(format::ExitKind kind);

// After an exec that failed: record again (shutdown_process ended the profile for the exec).
void resume_after_failed_exec();

// Test and embedding overrides, effective before the first call (core_api.cpp).
void set_output_override(const char* path);
void set_sample_override(int sample_every);

// One line on stderr, at most once per message id.
void say_once(int id, const char* a, const char* b = nullptr, const char* c = nullptr);

}  // namespace allocscope
