/* unit.h: cmocka's include order, once, for every unit test. */
#ifndef GPURUN_UNIT_H
#define GPURUN_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpurun.h"

#endif
