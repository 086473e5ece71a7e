/* error: the one way library calls report a failure to a front end. */
#include <stdarg.h>
#include <stdio.h>

#include "gpurun.h"

/* The name in parentheses: under static analysis gpurun.h makes gpurun_fail a macro too. */
int (gpurun_fail)(struct gpurun_error *err, int status, const char *fmt, ...)
{
	if (err) {
		va_list args;

		va_start(args, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, args);
		va_end(args);
		err->status = status;
	}
	return status;
}
