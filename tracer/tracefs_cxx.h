// tracefs_cxx.h: include this instead of <tracefs.h>.
//
// libtracefs 1.6.4 (Debian 12) has no extern "C" guard, and its inline tracefs_hist_start() passes the
// int 0 where enum tracefs_hist_command is expected, which g++ rejects. An overload taking int, declared
// before the header, catches those inline calls and forwards with a cast
// (../shared/reference/ci-environment.md section 6.1).
#pragma once

#include <event-parse.h>

struct tracefs_instance;
struct tracefs_hist;
static inline int tracefs_hist_command(struct tracefs_instance*, struct tracefs_hist*, int);
extern "C" {
#include <tracefs.h>
}
static inline int tracefs_hist_command(struct tracefs_instance* i, struct tracefs_hist* h, int c) {
    return tracefs_hist_command(i, h, static_cast<enum tracefs_hist_command>(c));
}
