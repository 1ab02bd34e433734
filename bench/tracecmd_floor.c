// bench/tracecmd_floor.c: the least any libtracecmd reader of a trace.dat pays (docs/performance.md, "trace.dat"):
// tracecmd_open, tracecmd_iterate_events over the top buffer and every instance buffer with a callback that only
// counts, tracecmd_close. Times are wall seconds on CLOCK_MONOTONIC.
//   gcc -O2 bench/tracecmd_floor.c -o /tmp/tracecmd_floor $(pkg-config --cflags --libs libtracecmd)
//   /tmp/tracecmd_floor /tmp/nvtrace-bench/trace.dat
#include <stdio.h>
#include <time.h>

#include <event-parse.h>
#include <trace-cmd/trace-cmd.h>

static long records;

static int count(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	(void)h, (void)r, (void)cpu, (void)data;
	records++;
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE.DAT\n", argv[0]);
		return 2;
	}
	double t0 = now();
	struct tracecmd_input *top = tracecmd_open(argv[1], 0);
	if (!top) {
		fprintf(stderr, "%s: libtracecmd cannot open it\n", argv[1]);
		return 1;
	}
	double t1 = now();
	tracecmd_iterate_events(top, NULL, 0, count, NULL);
	for (int i = 0; i < tracecmd_buffer_instances(top); i++) {
		struct tracecmd_input *in = tracecmd_buffer_instance_handle(top, i);
		if (!in)
			continue;
		tracecmd_iterate_events(in, NULL, 0, count, NULL);
		tracecmd_close(in);
	}
	double t2 = now();
	tracecmd_close(top);
	double t3 = now();
	printf("open %.3f s, iterate %.3f s, close %.3f s, %ld records\n", t1 - t0, t2 - t1, t3 - t2, records);
	return 0;
}
