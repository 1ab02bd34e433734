// uring_reopen MODE [HOLD_MS]: opens /dev/null (fd F), FIONREAD on it through libc's ioctl (the preload sees it),
// holds it open HOLD_MS (default 60: the /proc polls see it), then sets up a ring, closes F and opens /etc/hostname
// through an io_uring (IORING_OP_CLOSE, IORING_OP_OPENAT: no close or openat syscall), which gets F again, then
// FIONREAD on F with a raw syscall (the preload does not see it), TCGETS on F through libc (ENOTTY), and holds it
// HOLD_MS again. MODE "enter": a plain ring, each request submitted and waited for with io_uring_enter. MODE "sqpoll":
// IORING_SETUP_SQPOLL, the requests picked up by the ring's kernel thread, no io_uring_enter unless the thread
// sleeps (IORING_SQ_NEED_WAKEUP). Raw syscalls only (no liburing); the ring layout is the one of
// include/uapi/linux/io_uring.h and Documentation of io_uring_setup(2).
// Prints "fd F" and "reopened F as /etc/hostname". Exits 0; 77 when this kernel refuses io_uring (the test skips);
// 1 when a step fails or the reopen did not get F (the test would not reproduce the reused fd).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static struct io_uring_params params;
static int ring = -1, sqpoll = 0;
static unsigned char *sq_ring, *cq_ring;
static struct io_uring_sqe* sqes;

static void hold(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    if (ms > 0) nanosleep(&t, NULL);
}

// One request, submitted and its completion reaped: the cqe's res.
static int submit_one(const struct io_uring_sqe* sqe) {
    unsigned* tail = (unsigned*)(sq_ring + params.sq_off.tail);
    unsigned mask = *(unsigned*)(sq_ring + params.sq_off.ring_mask);
    unsigned* array = (unsigned*)(sq_ring + params.sq_off.array);
    unsigned t = *tail, i = t & mask;
    sqes[i] = *sqe;
    array[i] = i;
    __atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
    if (!sqpoll) {
        if (syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) return -1000 - errno;
    } else if (__atomic_load_n((unsigned*)(sq_ring + params.sq_off.flags), __ATOMIC_ACQUIRE) & IORING_SQ_NEED_WAKEUP) {
        if (syscall(SYS_io_uring_enter, ring, 0, 0, IORING_ENTER_SQ_WAKEUP, NULL, 0) < 0) return -1000 - errno;
    }
    unsigned* head = (unsigned*)(cq_ring + params.cq_off.head);
    unsigned* cq_tail = (unsigned*)(cq_ring + params.cq_off.tail);
    unsigned cq_mask = *(unsigned*)(cq_ring + params.cq_off.ring_mask);
    struct io_uring_cqe* cqes = (struct io_uring_cqe*)(cq_ring + params.cq_off.cqes);
    for (int spins = 0; __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE) == *head; ++spins) {
        if (spins > 20000) return -2000;  // 2 s without a completion
        usleep(100);
    }
    int res = cqes[*head & cq_mask].res;
    __atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
    return res;
}

int main(int argc, char** argv) {
    if (argc < 2 || (strcmp(argv[1], "enter") != 0 && strcmp(argv[1], "sqpoll") != 0)) {
        fprintf(stderr, "usage: uring_reopen enter|sqpoll [HOLD_MS]\n");
        return 1;
    }
    sqpoll = strcmp(argv[1], "sqpoll") == 0;
    const long hold_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 60;
    // Before the ring exists: this FIONREAD can be named.
    int fd = open("/dev/null", O_RDONLY);
    int n = 0;
    if (fd < 0) {
        perror("/dev/null");
        return 1;
    }
    printf("fd %d\n", fd);
    fflush(stdout);
    ioctl(fd, FIONREAD, &n);
    hold(hold_ms);

    memset(&params, 0, sizeof params);
    if (sqpoll) {
        params.flags = IORING_SETUP_SQPOLL;
        params.sq_thread_idle = 5000;  // ms: the thread stays awake through the run
    }
    ring = (int)syscall(SYS_io_uring_setup, 4, &params);
    if (ring < 0) {
        fprintf(stderr, "io_uring_setup: %s\n", strerror(errno));
        return errno == ENOSYS || errno == EPERM ? 77 : 1;
    }
    sq_ring = mmap(NULL, params.sq_off.array + params.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    cq_ring = mmap(NULL, params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    sqes = mmap(NULL, params.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq_ring == MAP_FAILED || cq_ring == MAP_FAILED || sqes == MAP_FAILED) {
        perror("mmap ring");
        return 1;
    }

    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_CLOSE;
    sqe.fd = fd;
    int res = submit_one(&sqe);
    if (res != 0) {
        fprintf(stderr, "IORING_OP_CLOSE: %d\n", res);
        return res == -EINVAL ? 77 : 1;  // a kernel before 5.6 has no IORING_OP_CLOSE
    }
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_OPENAT;
    sqe.fd = AT_FDCWD;
    sqe.addr = (unsigned long)"/etc/hostname";
    sqe.open_flags = O_RDONLY;
    res = submit_one(&sqe);
    if (res != fd) {
        fprintf(stderr, "IORING_OP_OPENAT gave %d, not %d\n", res, fd);
        return 1;
    }
    printf("reopened %d as /etc/hostname\n", fd);
    fflush(stdout);
    syscall(SYS_ioctl, fd, FIONREAD, &n);
    struct termios tio;
    ioctl(fd, TCGETS, &tio);  // ENOTTY
    hold(hold_ms);
    close(fd);
    return 0;
}
