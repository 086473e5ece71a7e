/* lease_internal.h: what lease.c shares with acquire.c and holder.c about lock files. */
#ifndef GPURUN_LEASE_INTERNAL_H
#define GPURUN_LEASE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpurun.h"
/* Room for a lock file's name: a UUID (a device without one is named by a shorter PCI address
 * or index) and ".lock". */
#define LEASE_FILE_NAME_SIZE (GPURUN_UUID_SIZE + sizeof(".lock"))

/* The lock file's name of a device: what identifies the GPU to every user of the directory. */
void lease_file_name(const struct gpurun_device *device, char *name, size_t size);
/* Whether a lease is held on the lock file fd is open on, by a look that claims nothing: a
 * shared lock held for an instant, which a claimant waits out. */
bool lease_is_held(int fd);

#endif
