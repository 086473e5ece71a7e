/* show.h: gpurun --show, once or --watch'ed, for the launcher's main. */
#ifndef GPURUN_SHOW_H
#define GPURUN_SHOW_H

#include "gpurun.h"

/* Probes and prints the report the request asks for; returns the exit status. */
int show_machine(const struct gpurun_request *request);

#endif
