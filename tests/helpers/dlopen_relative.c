/* dlopen_relative: loads LOADER (a shared library, by path) and asks it to dlopen NAME, a name
 * that only LOADER's own RUNPATH or $ORIGIN can resolve; prints "loaded" or dlopen's error.
 * It shows whether a dlopen hook keeps the caller that glibc resolves relative names for. */
#include <dlfcn.h>
#include <stdio.h>

typedef void *load_fn(const char *name);

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: dlopen_relative LOADER NAME\n");
		return 2;
	}
	void *loader = dlopen(argv[1], RTLD_NOW);
	load_fn *load = loader ? (load_fn *)dlsym(loader, "load_relative") : NULL;
	if (!load) {
		printf("no loader: %s\n", dlerror());
		return 1;
	}
	if (!load(argv[2])) {
		printf("failed: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	return 0;
}
