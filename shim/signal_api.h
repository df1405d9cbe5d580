// shim/signal_api.h — the program's own signal handlers, and the shim's hold signal (peer_waits.h).
//
// The shim interposes sigaction() and signal(): a program that installs a handler on the signal
// the holds use first stops the holds and lets the hold signals already sent land, so that none
// of them reaches the program's handler.  The shim's own calls go to the next definition.
#pragma once
#include <signal.h>

namespace allocscope {

// The next definition of sigaction (the C library's).
int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old);

}  // namespace allocscope
