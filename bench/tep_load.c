// bench/tep_load.c: what building nvtrace run's tep costs (tracer/capture.cpp, load_event_formats): libtracefs's
// tracefs_local_events_system for the systems nvtrace used to load (whole systems, and /proc/kallsyms always
// parsed) against the header page and the six formats nvtrace decodes. Needs root and tracefs:
//   gcc -O2 bench/tep_load.c -o /tmp/tep_load $(pkg-config --cflags --libs libtracefs libtraceevent) && sudo /tmp/tep_load
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <tracefs.h>
#include <event-parse.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
int main(void) {
  const char *sys[] = {"ftrace", "syscalls", "printk", NULL};
  double t0 = now();
  struct tep_handle *tep = tracefs_local_events_system(NULL, sys);
  double t1 = now();
  struct tep_handle *t2 = tep_alloc();
  { int size=0; char *h = tracefs_instance_file_read(NULL, "events/header_page", &size); tep_parse_header_page(t2, h, size, sizeof(long)); free(h); }
  const char *evs[][2] = {{"syscalls","sys_enter_ioctl"},{"syscalls","sys_exit_ioctl"},{"ftrace","print"},{"printk","console"},{"ftrace","funcgraph_entry"},{"ftrace","funcgraph_exit"}};
  for (int i = 0; i < 6; i++) { int size=0; char *b = tracefs_event_file_read(NULL, evs[i][0], evs[i][1], "format", &size); if (b) { tep_parse_event(t2, b, size, evs[i][0]); free(b);} }
  double t3 = now();
  printf("local_events_system %.3f s, %d events; headers+6 formats %.4f s\n", t1-t0, tep_get_events_count(tep), t3-t1);
  tep_free(tep);
  return 0;
}
