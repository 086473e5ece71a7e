/* descriptors_internal.h: closing what a process inherited, in a freshly forked child. */
#ifndef GPURUN_DESCRIPTORS_INTERNAL_H
#define GPURUN_DESCRIPTORS_INTERNAL_H

/* Closes every descriptor but `kept`. Safe after fork in a multi-threaded program: it
 * allocates nothing. With close_range (Linux 5.9); where the kernel or a seccomp policy refuses
 * it, one by one as /proc/self/fd lists them. */
void close_all_but(int kept);

#endif
