/* queue_internal.h: the fair waiting line in the lock directory, shared by acquire.c only. */
#ifndef GPURUN_QUEUE_INTERNAL_H
#define GPURUN_QUEUE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpurun.h"

#define QUEUE_TICKET_SIZE 64

/* A waiter's place in line. Waiters for the same pool of GPUs (the same set of devices the
 * inherited masks allow, however they name it) are served first come, first served: nobody claims a GPU of the pool
 * while an older waiter for it is alive. A ticket is a file held with flock, so a waiter that
 * dies leaves the line at once. */
struct queue {
	int dir_fd;                     /* <lock dir>/queue */
	char path[4096];
	char pool[17];                  /* 16 hex digits naming the pool; "" until set */
	int ticket_fd;                  /* -1 until joined */
	char ticket[QUEUE_TICKET_SIZE];
	char ahead[QUEUE_TICKET_SIZE];  /* the live ticket just ahead of ours; "" at the head */
};

int queue_open(struct queue *queue, int lock_dir_fd, const char *lock_dir,
	       struct gpurun_error *err);
/* Names the pool after the devices a waiter may use (lease_file_name of each; sorted here). */
void queue_set_pool(struct queue *queue, char **device_keys, size_t count);
/* Counts the waiters ahead of us (all waiters of the pool before we join) and remembers the
 * nearest live one in queue->ahead; 0 exactly when no live waiter is ahead. */
size_t queue_waiting_ahead(struct queue *queue);
int queue_join(struct queue *queue, struct gpurun_error *err);
/* A ticket is live while its waiter holds it; a dead waiter's ticket is removed on sight. */
bool queue_ticket_is_live(const struct queue *queue, const char *name);
void queue_close(struct queue *queue);

#endif
