/* child_internal.h: the short-lived helper processes gpurun waits on (nvidia-smi, the child that
 * asks the CUDA driver for its order): a deadline for each wait, and never a hang on one that
 * will not die. */
#ifndef GPURUN_CHILD_INTERNAL_H
#define GPURUN_CHILD_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

/* Reaps pid, returning true with its wait status, or false once the deadline (a
 * monotonic_seconds value) has passed. A child that a host program's SIGCHLD handler reaped
 * first counts as exited with status 0. */
bool child_wait_until(pid_t pid, double deadline, int *wait_status);

/* SIGKILL to pid (or to its process group, where it leads one), then a short bounded wait: a
 * process stuck in the kernel (a wedged driver's ioctl) may not die at once. */
void child_kill_and_reap(pid_t pid, bool group);

#endif
