/* runpath_loader: a shared library built with RUNPATH $ORIGIN/sub; its dlopen of a bare name
 * succeeds only when glibc sees this library as the caller (preload_test.sh). */
#include <dlfcn.h>

void *load_relative(const char *name);

void *load_relative(const char *name)
{
	return dlopen(name, RTLD_NOW);
}
